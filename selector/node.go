package selector

import (
	"slices"
	"strings"
)

// node is one vertex of the parsed expression tree. Implementations are
// value types built once by the parser and never mutated afterwards.
type node interface {
	matches(labels map[string]string) bool
	// appendTo appends the canonical text, in Calico's format.
	appendTo(b []byte) []byte
}

type allNode struct{}

func (allNode) matches(map[string]string) bool { return true }
func (allNode) appendTo(b []byte) []byte       { return append(b, "all()"...) }

// globalNode is always true because the labels evaluated by this package
// belong to nodes, which are not namespaced.
type globalNode struct{}

func (globalNode) matches(map[string]string) bool { return true }
func (globalNode) appendTo(b []byte) []byte       { return append(b, "global()"...) }

type hasNode struct{ key string }

func (n hasNode) matches(labels map[string]string) bool {
	_, ok := labels[n.key]
	return ok
}

func (n hasNode) appendTo(b []byte) []byte {
	b = append(b, "has("...)
	b = append(b, n.key...)
	return append(b, ')')
}

type notNode struct{ x node }

// negate wraps x in a negation, unwrapping an existing one instead so that
// !(!x) canonicalises to x and String stays a fixed point under Parse.
func negate(x node) node {
	if n, ok := x.(notNode); ok {
		return n.x
	}
	return notNode{x}
}

func (n notNode) matches(labels map[string]string) bool { return !n.x.matches(labels) }

func (n notNode) appendTo(b []byte) []byte { return n.x.appendTo(append(b, '!')) }

type andNode []node

func (n andNode) matches(labels map[string]string) bool {
	for _, x := range n {
		if !x.matches(labels) {
			return false
		}
	}
	return true
}

func (n andNode) appendTo(b []byte) []byte { return appendGroup(b, n, " && ") }

type orNode []node

func (n orNode) matches(labels map[string]string) bool {
	for _, x := range n {
		if x.matches(labels) {
			return true
		}
	}
	return false
}

func (n orNode) appendTo(b []byte) []byte { return appendGroup(b, n, " || ") }

// appendGroup always parenthesises, as Calico does, so the output never
// depends on precedence and nested groups re-parse to the same tree.
func appendGroup(b []byte, xs []node, sep string) []byte {
	b = append(b, '(')
	for i, x := range xs {
		if i > 0 {
			b = append(b, sep...)
		}
		b = x.appendTo(b)
	}
	return append(b, ')')
}

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opContains
	opStartsWith
	opEndsWith
	opIn
	opNotIn
)

var opText = [...]string{
	opEq:         "==",
	opNe:         "!=",
	opContains:   "contains",
	opStartsWith: "starts with",
	opEndsWith:   "ends with",
	opIn:         "in",
	opNotIn:      "not in",
}

// cmpNode is a comparison of one label against one string value.
type cmpNode struct {
	key, val string
	op       cmpOp
}

func (n cmpNode) matches(labels map[string]string) bool {
	v, ok := labels[n.key]
	if !ok {
		// Only the negative operator holds for an absent label.
		return n.op == opNe
	}
	switch n.op {
	case opEq:
		return v == n.val
	case opNe:
		return v != n.val
	case opContains:
		return strings.Contains(v, n.val)
	case opStartsWith:
		return strings.HasPrefix(v, n.val)
	default:
		return strings.HasSuffix(v, n.val)
	}
}

func (n cmpNode) appendTo(b []byte) []byte {
	b = appendKeyOp(b, n.key, n.op)
	return appendQuoted(b, n.val)
}

// setNode implements "in" and "not in". The map makes lookups O(1) without
// allocating; the sorted slice gives the canonical rendering.
type setNode struct {
	key    string
	vals   []string
	set    map[string]struct{}
	negate bool
}

func newSetNode(key string, vals []string, negated bool) setNode {
	slices.Sort(vals)
	vals = slices.Compact(vals)
	set := make(map[string]struct{}, len(vals))
	for _, v := range vals {
		set[v] = struct{}{}
	}
	return setNode{key: key, vals: vals, set: set, negate: negated}
}

func (n setNode) matches(labels map[string]string) bool {
	v, ok := labels[n.key]
	if !ok {
		return n.negate
	}
	_, in := n.set[v]
	return in != n.negate
}

func (n setNode) appendTo(b []byte) []byte {
	op := opIn
	if n.negate {
		op = opNotIn
	}
	b = append(appendKeyOp(b, n.key, op), '{')
	for i, v := range n.vals {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendQuoted(b, v)
	}
	return append(b, '}')
}

func appendKeyOp(b []byte, key string, op cmpOp) []byte {
	b = append(b, key...)
	b = append(b, ' ')
	b = append(b, opText[op]...)
	return append(b, ' ')
}

// appendQuoted prefers double quotes like Calico. The grammar has no
// escapes, so a value holding a double quote must use single quotes; a
// parsed value can never hold both kinds.
func appendQuoted(b []byte, v string) []byte {
	q := byte('"')
	if strings.IndexByte(v, '"') >= 0 {
		q = '\''
	}
	b = append(b, q)
	b = append(b, v...)
	return append(b, q)
}
