package selector

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty-is-all", "", "all()"},
		{"blank-is-all", " \t ", "all()"},
		{"all", "all()", "all()"},
		{"all-inner-space", " all( ) ", "all()"},
		{"global", "global()", "global()"},
		{"has", "has(a)", "has(a)"},
		{"has-inner-space", "has( a )", "has(a)"},
		{"not-has", "!has(a)", "!has(a)"},
		{"not-has-space", "! has(a)", "!has(a)"},
		{"double-not-cancels", "!!has(a)", "has(a)"},
		{"triple-not", "! !! has(a)", "!has(a)"},
		{"not-through-parens-cancels", "!(!has(a))", "has(a)"},
		{"eq-single-quotes", "a == 'b'", `a == "b"`},
		{"eq-double-quotes", `a == "b"`, `a == "b"`},
		{"eq-no-space", `a=="b"`, `a == "b"`},
		{"eq-tabs", "a\t==\t'b'", `a == "b"`},
		{"eq-empty-value", "a == ''", `a == ""`},
		{"value-with-double-quote", `a == '"'`, `a == '"'`},
		{"value-with-single-quote", `a == "'"`, `a == "'"`},
		{"value-keeps-spaces-and-newline", "a == ' x\ny '", "a == \" x\ny \""},
		{"ne", "a != 'b'", `a != "b"`},
		{"ne-no-space", `a!='"'`, `a != '"'`},
		{"contains", "a contains 'b'", `a contains "b"`},
		{"contains-no-space", "a contains'b'", `a contains "b"`},
		{"starts-with", "a starts with 'b'", `a starts with "b"`},
		{"startswith-one-word", "a startswith 'b'", `a starts with "b"`},
		{"ends-with", "a ends  with 'b'", `a ends with "b"`},
		{"endswith-one-word", `a endswith "'"`, `a ends with "'"`},
		{"in", "a in {'x', 'y'}", `a in {"x", "y"}`},
		{"in-sorted-deduped", `a in {"z","x","y","x","a"}`, `a in {"a", "x", "y", "z"}`},
		{"in-no-space", "a in{'x'}", `a in {"x"}`},
		{"in-empty", "a in {}", "a in {}"},
		{"in-trailing-comma", "a in {'x',}", `a in {"x"}`},
		{"in-mixed-quotes", `a in {"'", '"', "c"}`, `a in {'"', "'", "c"}`},
		{"not-in", "a not in {'x'}", `a not in {"x"}`},
		{"notin-one-word", "a notin {'x'}", `a not in {"x"}`},
		{"key-charset", "Ab9_./-z == 'v'", `Ab9_./-z == "v"`},
		{"key-domain-prefix", "topology.kubernetes.io/zone == 'z1'", `topology.kubernetes.io/zone == "z1"`},
		{"keyword-as-key", "contains == 'x' && in == 'y'", `(contains == "x" && in == "y")`},
		{"all-as-key", "all == 'x'", `all == "x"`},
		{"and", "a == 'b' && c == 'd'", `(a == "b" && c == "d")`},
		{"or", "a == 'b' || has(c)", `(a == "b" || has(c))`},
		{"and-binds-tighter-left", "has(a) && has(b) || has(c)", "((has(a) && has(b)) || has(c))"},
		{"and-binds-tighter-right", "has(a) || has(b) && has(c)", "(has(a) || (has(b) && has(c)))"},
		{"parens-override", "(has(a) || has(b)) && has(c)", "((has(a) || has(b)) && has(c))"},
		{"parens-single", " (all() )", "all()"},
		{"long-chain-flat", "has(a)&&has(b)&&has(c)", "(has(a) && has(b) && has(c))"},
		{"explicit-grouping-kept", "(has(a) && has(b)) && has(c)", "((has(a) && has(b)) && has(c))"},
		{"not-binds-to-operation", "!a == 'b' && c != 'd'", `(!a == "b" && c != "d")`},
		{"not-group", `! (a == "b"&&! c != "d")`, `!(a == "b" && !c != "d")`},
		{"calico-complex", "!(!(k == 'v' && has(t) || all()) && (a in {'b', 'c'}))",
			`!(!((k == "v" && has(t)) || all()) && a in {"b", "c"})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := sel.String(); got != tt.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Parse(sel.String())
			if err != nil || again.String() != tt.want {
				t.Fatalf("round trip of %q: %v, %v", tt.want, again, err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		offset   int
		msg      string
	}{
		{"missing-value", "a == ", 5, `selector "a == ": unexpected end of input at offset 5`},
		{"unterminated-single", "a == 'b", 5, "unterminated string"},
		{"unterminated-double", `a == "b`, 5, "unterminated string"},
		{"mismatched-quotes", `a == "b'`, 5, "unterminated string"},
		{"unterminated-in-set", "a in {'x', 'y}", 11, "unterminated string"},
		{"single-equals", "a = 'b'", 2, `unexpected '='`},
		{"bad-operator", "a >= 'b'", 2, "operator after label key a"},
		{"starts-without-with", "a starts 'b'", 9, `(expected "with")`},
		{"not-without-in", "a not {'b'}", 6, `unexpected '{' at offset 6 (expected "in")`},
		{"bare-label", "a", 1, "unexpected end of input"},
		{"label-vs-label", "a == b", 5, "unexpected 'b'"},
		{"literal-on-left", "'b' == a", 0, "unexpected '\\''"},
		{"two-labels", "a b", 2, "operator after label key a"},
		{"trailing-garbage", "has(a) b", 7, `unexpected 'b' at offset 7 (expected "&&", "||" or end of input)`},
		{"trailing-paren", "has(a))", 6, "unexpected ')'"},
		{"single-ampersand", "has(a) & has(b)", 7, "unexpected '&'"},
		{"single-pipe", "has(a) | has(b)", 7, "unexpected '|'"},
		{"dangling-and", "has(a) &&", 9, "unexpected end of input"},
		{"dangling-or", `foo == "bar" ||`, 15, "unexpected end of input"},
		{"dangling-not", "!", 1, "unexpected end of input"},
		{"not-equals-as-prefix", "!= 'a'", 0, "unexpected '!'"},
		{"empty-parens", "()", 1, "unexpected ')'"},
		{"unclosed-paren", "(has(a)", 7, `(expected "&&", "||" or ")")`},
		{"lone-close-paren", ")", 0, "unexpected ')'"},
		{"has-empty", "has()", 4, "(expected label key)"},
		{"has-unclosed", "has(a", 5, `(expected ")")`},
		{"has-space-before-paren", "has (a)", 4, "operator after label key has"},
		{"all-with-arg", "all(a)", 4, `(expected ")")`},
		{"in-without-set", `a in "b"`, 5, `(expected "{")`},
		{"in-leading-comma", "a in {,}", 6, `(expected quoted string or "}")`},
		{"in-double-comma", "a in {'x',,}", 10, "unexpected ','"},
		{"in-missing-comma", "a in {'x' 'y'}", 10, `(expected "," or "}")`},
		{"in-unclosed", "a in {'x'", 9, "unexpected end of input"},
		{"newline-not-whitespace", "has(a)\n&& has(b)", 6, `unexpected '\n'`},
		{"bad-char", "a == 'b' && %", 12, "unexpected '%'"},
		{"invalid-utf8", "\xff", 0, "unexpected byte 0xff"},
		{"unicode-key", "ключ == 'v'", 0, "unexpected 'к'"},
		{"too-deep", strings.Repeat("(", 101) + "all()" + strings.Repeat(")", 101), 100,
			"parentheses nested deeper than 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error", tt.in, sel)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			if pe.Offset != tt.offset {
				t.Errorf("offset = %d, want %d (%v)", pe.Offset, tt.offset, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestParseDepthLimitBoundary(t *testing.T) {
	in := strings.Repeat("(", maxDepth) + "all()" + strings.Repeat(")", maxDepth)
	if _, err := Parse(in); err != nil {
		t.Fatalf("nesting of exactly %d: %v", maxDepth, err)
	}
	// Negations and chains are iterative, so they have no limit.
	long := strings.Repeat("!", 100001) + strings.Repeat("has(a) && ", 10000) + "has(b)"
	if _, err := Parse(long); err != nil {
		t.Fatalf("long flat input: %v", err)
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustParse did not panic on bad input")
		}
	}()
	MustParse("a ==")
}

type labels = map[string]string

func TestMatches(t *testing.T) {
	tests := []struct {
		name, sel string
		labels    labels
		want      bool
	}{
		{"all-no-labels", "all()", nil, true},
		{"empty-matches-everything", "", labels{"a": "b"}, true},
		{"global-is-true-for-nodes", "global()", nil, true},
		{"has-present", "has(a)", labels{"a": "x"}, true},
		{"has-empty-value", "has(a)", labels{"a": ""}, true},
		{"has-absent", "has(a)", labels{"b": "x"}, false},
		{"not-has-absent", "!has(a)", labels{"b": "x"}, true},
		{"not-has-present", "!has(a)", labels{"a": "x"}, false},
		{"eq-match", "a == 'b'", labels{"a": "b", "c": "d"}, true},
		{"eq-other-value", "a == 'b'", labels{"a": "c"}, false},
		{"eq-absent", "a == 'b'", labels{"c": "b"}, false},
		{"eq-case-sensitive", "a == 'b'", labels{"a": "B"}, false},
		{"eq-empty-value-absent", "a == ''", nil, false},
		{"eq-empty-value-present", "a == ''", labels{"a": ""}, true},
		{"ne-other-value", "a != 'b'", labels{"a": "c"}, true},
		{"ne-same-value", "a != 'b'", labels{"a": "b"}, false},
		{"ne-absent-is-true", "a != 'b'", nil, true},
		{"not-eq-absent-is-true", "!a == 'b'", nil, true},
		{"in-member", "a in {'x','y'}", labels{"a": "y"}, true},
		{"in-non-member", "a in {'x','y'}", labels{"a": "z"}, false},
		{"in-absent", "a in {'x'}", nil, false},
		{"in-empty-set", "a in {}", labels{"a": ""}, false},
		{"not-in-member", "a not in {'x'}", labels{"a": "x"}, false},
		{"not-in-non-member", "a not in {'x'}", labels{"a": "z"}, true},
		{"not-in-absent-is-true", "a not in {'x'}", nil, true},
		{"not-in-empty-set-absent", "a not in {}", nil, true},
		{"contains-yes", "a contains 'b'", labels{"a": "abc"}, true},
		{"contains-no", "a contains 'b'", labels{"a": "ac"}, false},
		{"contains-absent", "a contains ''", nil, false},
		{"contains-empty-present", "a contains ''", labels{"a": "x"}, true},
		{"starts-yes", "a starts with 'ab'", labels{"a": "abc"}, true},
		{"starts-no", "a starts with 'ab'", labels{"a": "cab"}, false},
		{"starts-absent", "a starts with 'ab'", nil, false},
		{"ends-yes", "a ends with 'bc'", labels{"a": "abc"}, true},
		{"ends-no", "a ends with 'bc'", labels{"a": "bca"}, false},
		{"ends-absent", "a ends with 'bc'", nil, false},
		{"and-both", "has(a) && has(b)", labels{"a": "", "b": ""}, true},
		{"and-one", "has(a) && has(b)", labels{"a": ""}, false},
		{"or-one", "has(a) || has(b)", labels{"b": ""}, true},
		{"or-none", "has(a) || has(b)", nil, false},
		{"precedence-and-first", "has(a) || has(b) && has(c)", labels{"a": ""}, true},
		{"precedence-parens", "(has(a) || has(b)) && has(c)", labels{"a": ""}, false},
		{"not-group", "!(has(a) || has(b))", labels{"c": ""}, true},
		{"node-selector", "rack == 'r1' && role in {'rr', 'spine'}", labels{"rack": "r1", "role": "rr"}, true},
		{"node-selector-miss", "rack == 'r1' && role in {'rr', 'spine'}", labels{"rack": "r1", "role": "leaf"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel := MustParse(tt.sel)
			if got := sel.Matches(tt.labels); got != tt.want {
				t.Fatalf("%q.Matches(%v) = %v, want %v", tt.sel, tt.labels, got, tt.want)
			}
			if got := MustParse(sel.String()).Matches(tt.labels); got != tt.want {
				t.Fatalf("canonical %q.Matches(%v) = %v, want %v", sel, tt.labels, got, tt.want)
			}
		})
	}
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	sel := MustParse(benchSelector)
	l := benchLabels()
	if n := testing.AllocsPerRun(100, func() { sel.Matches(l) }); n != 0 {
		t.Fatalf("Matches allocated %v times per run", n)
	}
}

// fuzzLabelSets mix present, absent and empty labels and quote characters
// so the equivalence check below exercises every operator's branches.
var fuzzLabelSets = []labels{
	nil,
	{"a": ""},
	{"a": "b", "b": "a"},
	{"a": "'", "b": `"`, "k": "v"},
	{"a": "abc", "k": "x", "rack": "r1", "role": "rr"},
}

func FuzzParse(f *testing.F) {
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := Parse(in)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(in) {
				t.Fatalf("Parse(%q): bad error %#v", in, err)
			}
			return
		}
		canon := sel.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) ok but canonical %q fails: %v", in, canon, err)
		}
		if again.String() != canon {
			t.Fatalf("canonical form not stable: %q -> %q -> %q", in, canon, again.String())
		}
		for _, l := range fuzzLabelSets {
			if sel.Matches(l) != again.Matches(l) {
				t.Fatalf("%q and %q disagree on %v", in, canon, l)
			}
		}
	})
}

const benchSelector = "rack == 'r1' && role in {'rr', 'spine', 'leaf'} && !has(drain) || zone starts with 'us-'"

func benchLabels() labels {
	return labels{
		"rack": "r1", "role": "rr", "zone": "eu-west-1a",
		"kubernetes.io/hostname": "node-1", "topology.kubernetes.io/zone": "eu-west-1a",
	}
}

func BenchmarkMatches(b *testing.B) {
	sel := MustParse(benchSelector)
	l := benchLabels()
	b.ReportAllocs()
	for b.Loop() {
		if !sel.Matches(l) {
			b.Fatal("expected match")
		}
	}
}
