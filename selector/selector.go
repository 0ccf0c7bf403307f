package selector

import "fmt"

// Selector is a parsed, immutable selector; safe for concurrent use.
type Selector interface {
	// Matches reports whether labels satisfy the selector. A nil map is
	// treated as a node without labels.
	Matches(labels map[string]string) bool
	// String returns the canonical form, which Parse accepts and maps to
	// itself: Parse(s.String()).String() == s.String().
	String() string
}

// ParseError describes why and where a selector failed to parse. Parse
// always returns errors of this type (as *ParseError).
type ParseError struct {
	Selector string // the full input
	Offset   int    // byte offset into Selector where the problem was found
	Msg      string // what went wrong, e.g. "unterminated string"
	Expected string // what would have been valid at Offset; may be empty
}

func (e *ParseError) Error() string {
	s := fmt.Sprintf("selector %q: %s at offset %d", e.Selector, e.Msg, e.Offset)
	if e.Expected != "" {
		s += " (expected " + e.Expected + ")"
	}
	return s
}

// Parse parses a Calico selector expression. The empty string (or one of
// only spaces and tabs) parses to all(). Errors are *ParseError values;
// Parse never panics.
func Parse(s string) (Selector, error) {
	p := parser{src: s}
	root, err := p.parseSelector()
	if err != nil {
		return nil, err
	}
	// Rendering once here keeps String free and the value immutable.
	return &selector{root: root, text: string(root.appendTo(nil))}, nil
}

// MustParse is like Parse but panics on error. It is meant for tests and
// for package-level selectors written as constants.
func MustParse(s string) Selector {
	sel, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return sel
}

type selector struct {
	root node
	text string
}

func (s *selector) Matches(labels map[string]string) bool { return s.root.matches(labels) }

func (s *selector) String() string { return s.text }
