package main

import (
	"strconv"
	"strings"
	"unicode"
)

// printable is s as the text forms of plan and status print it: a name or
// a reason holding a control character (a newline, an ANSI escape code)
// has it escaped, Go-style, so that nothing an object's author typed can
// break a line or drive the operator's terminal (docs/semantics.md §7).
// Ordinary text is left as it is.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}
