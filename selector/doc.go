// Package selector parses and evaluates Calico label selectors, the
// expression language used by BGPPeer nodeSelector and peerSelector, against
// a node's labels.
//
// The grammar and semantics follow Calico's own implementation
// (libcalico-go/lib/selector), so a selector accepted here means the same
// thing to Calico and vice versa, apart from the nesting limit noted below.
//
// # Grammar
//
//	selector  = [ or-expr ]
//	or-expr   = and-expr { "||" and-expr }
//	and-expr  = operation { "&&" operation }
//	operation = { "!" } term
//	term      = "(" or-expr ")"
//	          | "all(" ")" | "global(" ")" | "has(" key ")"
//	          | key ( "==" | "!=" | "contains" | "starts" "with" | "ends" "with" ) string
//	          | key [ "not" ] "in" "{" [ string { "," string } [ "," ] ] "}"
//	key       = 1*( ASCII letter | digit | "_" | "." | "/" | "-" )
//	string    = "'" { any byte except "'" } "'" | `"` { any byte except `"` } `"`
//
// "&&" binds tighter than "||". "!" applies to a single operation, so
// !a == 'x' means !(a == 'x'); repeated "!" cancel out in pairs.
//
// Lexical details inherited from Calico, some of them surprising:
//   - Only space and tab are whitespace; a newline is a syntax error.
//   - Strings have no escape sequences: a value containing ' must be written
//     in double quotes and vice versa, and no value can contain both.
//   - "has(", "all(" and "global(" must be written without a space before
//     the parenthesis; spaces inside are fine: has( k ).
//   - Keywords after a key match as prefixes, so a in{'x'}, a notin {'x'}
//     and a startswith 'x' are all valid.
//   - A set may be empty, a in {}, and may end with a comma, a in {'x',}.
//
// Parentheses may nest at most 100 deep; Calico has no limit, but this
// package parses untrusted input and refuses to recurse without bound.
//
// # Semantics
//
// For labels L:
//
//	all()                true
//	global()             true: nodes are global (non-namespaced) resources
//	has(k)               k is present in L (any value, including "")
//	k == 'v'             k is present and L[k] == v
//	k != 'v'             k is absent, or L[k] != v
//	k in {...}           k is present and L[k] is in the set
//	k not in {...}       k is absent, or L[k] is not in the set
//	k contains 's'       k is present and L[k] contains s
//	k starts with 's'    k is present and L[k] has prefix s
//	k ends with 's'      k is present and L[k] has suffix s
//
// Comparisons are exact, byte-wise and case-sensitive.
//
// An empty or all-whitespace selector parses to all(), as in Calico. Parse
// cannot tell "unset" from "match everything"; callers for which an empty
// field means "unset" must check for the empty string before calling Parse.
//
// # Canonical form
//
// String returns Calico's canonical form: operators surrounded by single
// spaces, values double-quoted unless they contain a double quote, set
// members sorted and de-duplicated, every && and || group wrapped in
// parentheses, and empty input rendered as all(). Unlike Calico, a double
// negation written through parentheses, !(!has(k)), is simplified to has(k)
// so that the canonical form is a fixed point: Parse(s.String()).String()
// always equals s.String().
//
// Parsed selectors are immutable and safe for concurrent use; Matches does
// not allocate.
package selector
