package selector

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds parenthesis nesting, the only source of recursion in the
// parser, so hostile input cannot exhaust the stack.
const maxDepth = 100

const (
	wantTerm     = `a term such as has(k), k == 'v', "!" or "("`
	wantAndOrEnd = `"&&", "||" or end of input`
	wantAndOrRP  = `"&&", "||" or ")"`
)

// parser is a recursive-descent parser working directly on the input.
// Calico tokenizes first and decides whether a word is a keyword by looking
// at the previous token; here the parser's position in the grammar carries
// the same information, which also gives every error an exact offset.
type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) parseSelector() (node, error) {
	p.skipSpace()
	if p.eof() {
		return allNode{}, nil
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if !p.eof() {
		return nil, p.unexpected(wantAndOrEnd)
	}
	return n, nil
}

func (p *parser) parseOr() (node, error) {
	return p.parseChain("||", p.parseAnd, func(xs []node) node { return orNode(xs) })
}

func (p *parser) parseAnd() (node, error) {
	return p.parseChain("&&", p.parseOperation, func(xs []node) node { return andNode(xs) })
}

// parseChain parses operands separated by sep. Chains are built iteratively
// so long a && b && ... inputs cost no stack.
func (p *parser) parseChain(sep string, operand func() (node, error), join func([]node) node) (node, error) {
	first, err := operand()
	if err != nil {
		return nil, err
	}
	xs := []node{first}
	for {
		p.skipSpace()
		if !p.consume(sep) {
			break
		}
		x, err := operand()
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	if len(xs) == 1 {
		return first, nil
	}
	return join(xs), nil
}

// parseOperation parses an optionally negated term. Leading "!"s are folded
// into one flag, as Calico does, so "!!!!..." needs no recursion.
func (p *parser) parseOperation() (node, error) {
	negated := false
	for p.skipSpace(); p.peek("!") && !p.peek("!="); p.skipSpace() {
		negated = !negated
		p.pos++
	}
	n, err := p.parseTerm()
	if err != nil || !negated {
		return n, err
	}
	return negate(n), nil
}

func (p *parser) parseTerm() (node, error) {
	switch {
	case p.eof():
		return nil, p.unexpected(wantTerm)
	case p.peek("("):
		return p.parseParens()
	case p.consume("has("):
		return p.parseHas()
	case p.consume("all("):
		return p.closeCall(allNode{})
	case p.consume("global("):
		return p.closeCall(globalNode{})
	case isKeyByte(p.src[p.pos]):
		return p.parseComparison()
	}
	return nil, p.unexpected(wantTerm)
}

func (p *parser) parseParens() (node, error) {
	if p.depth >= maxDepth {
		return nil, p.errorf(p.pos, "", "parentheses nested deeper than %d", maxDepth)
	}
	p.depth++
	p.pos++ // "("
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if !p.consume(")") {
		return nil, p.unexpected(wantAndOrRP)
	}
	p.depth--
	return n, nil
}

func (p *parser) parseHas() (node, error) {
	p.skipSpace()
	key := p.key()
	if key == "" {
		return nil, p.unexpected("label key")
	}
	return p.closeCall(hasNode{key})
}

// closeCall finishes all(, global( and has(k by requiring the ")".
func (p *parser) closeCall(n node) (node, error) {
	p.skipSpace()
	if !p.consume(")") {
		return nil, p.unexpected(`")"`)
	}
	return n, nil
}

func (p *parser) parseComparison() (node, error) {
	key := p.key()
	p.skipSpace()
	op, err := p.operator(key)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if op == opIn || op == opNotIn {
		vals, err := p.parseSet()
		if err != nil {
			return nil, err
		}
		return newSetNode(key, vals, op == opNotIn), nil
	}
	val, err := p.parseString()
	if err != nil {
		return nil, err
	}
	return cmpNode{key: key, val: val, op: op}, nil
}

// operators lists each operator's words in the order tried. Words match as
// prefixes with optional space between them, exactly like Calico, which is
// why "a in{'x'}" and "a startswith 'x'" are valid.
var operators = []struct {
	words []string
	op    cmpOp
}{
	{[]string{"=="}, opEq},
	{[]string{"!="}, opNe},
	{[]string{"contains"}, opContains},
	{[]string{"starts", "with"}, opStartsWith},
	{[]string{"ends", "with"}, opEndsWith},
	{[]string{"not", "in"}, opNotIn},
	{[]string{"in"}, opIn},
}

func (p *parser) operator(key string) (cmpOp, error) {
	for _, o := range operators {
		if !p.consume(o.words[0]) {
			continue
		}
		// No operator shares a first word, so a partial match is final.
		for _, w := range o.words[1:] {
			p.skipSpace()
			if !p.consume(w) {
				return 0, p.unexpected(strconv.Quote(w))
			}
		}
		return o.op, nil
	}
	return 0, p.unexpected("operator after label key " + key)
}

// parseSet parses "{...}". Like Calico it accepts an empty set and one
// trailing comma, but not a leading or doubled comma.
func (p *parser) parseSet() ([]string, error) {
	if !p.consume("{") {
		return nil, p.unexpected(`"{"`)
	}
	var vals []string
	for p.skipSpace(); !p.eof() && isQuote(p.src[p.pos]); p.skipSpace() {
		v, err := p.parseString()
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		p.skipSpace()
		if !p.consume(",") {
			if !p.consume("}") {
				return nil, p.unexpected(`"," or "}"`)
			}
			return vals, nil
		}
	}
	if !p.consume("}") {
		return nil, p.unexpected(`quoted string or "}"`)
	}
	return vals, nil
}

// parseString reads a quoted value. There are no escapes: the value runs
// to the next occurrence of the opening quote character.
func (p *parser) parseString() (string, error) {
	if p.eof() || !isQuote(p.src[p.pos]) {
		return "", p.unexpected("quoted string")
	}
	start := p.pos
	end := strings.IndexByte(p.src[start+1:], p.src[start])
	if end < 0 {
		return "", p.errorf(start, "", "unterminated string")
	}
	p.pos = start + 1 + end + 1
	return p.src[start+1 : start+1+end], nil
}

func (p *parser) key() string {
	start := p.pos
	for !p.eof() && isKeyByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '/' || c == '-'
}

func isQuote(c byte) bool { return c == '\'' || c == '"' }

// skipSpace skips only space and tab: Calico rejects other whitespace, and
// accepting more here would let selectors through that Calico refuses.
func (p *parser) skipSpace() {
	for !p.eof() && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

func (p *parser) peek(s string) bool { return strings.HasPrefix(p.src[p.pos:], s) }

func (p *parser) consume(s string) bool {
	if !p.peek(s) {
		return false
	}
	p.pos += len(s)
	return true
}

func (p *parser) errorf(at int, expected, format string, args ...any) error {
	return &ParseError{Selector: p.src, Offset: at, Msg: fmt.Sprintf(format, args...), Expected: expected}
}

// unexpected reports whatever sits at the current position, so that each
// error names both what was found and what would have been accepted.
func (p *parser) unexpected(expected string) error {
	if p.eof() {
		return p.errorf(p.pos, expected, "unexpected end of input")
	}
	r, size := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && size == 1 {
		return p.errorf(p.pos, expected, "unexpected byte 0x%02x", p.src[p.pos])
	}
	return p.errorf(p.pos, expected, "unexpected %q", r)
}
