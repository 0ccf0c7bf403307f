package watch

import (
	"bytes"
	"fmt"

	// gopkg.in/yaml.v3, not its successor go.yaml.in/yaml/v3: GoBGP links
	// the former (through viper), and the two parse alike (v3.0.1 and
	// v3.0.5 differ only in decoding merged maps into Go values, which a
	// Node is not); one copy in the binary (docs/performance.md "What the
	// binary maps", internal/importrules TestAgentLinksOneYAMLv3).
	yaml3 "gopkg.in/yaml.v3"
)

// YAML aliases let a small document stand for a huge one: 100 anchored
// 10 KB strings and a few hundred aliases expand past 4 GB, which go-yaml's
// alias-ratio check lets through and which kills the process when
// sigs.k8s.io/yaml builds the expanded tree. So before a document with an
// alias is decoded, its expanded size is measured on go-yaml v3's node tree
// (which keeps aliases as references, costing no more than the text) and
// a document over either bound is a problem instead.
const (
	maxExpandedNodes = 200_000  // nodes (scalars, mappings, sequences) after expansion
	maxExpandedBytes = 16 << 20 // scalar bytes after expansion
)

// checkExpansion returns why a document would expand too far, or "".
// A document go-yaml v3 cannot parse is left to the decoder to report.
func checkExpansion(doc []byte) string {
	if !bytes.ContainsRune(doc, '*') {
		return "" // no alias: the expansion is the text itself, already bounded
	}
	var root yaml3.Node
	if yaml3.Unmarshal(doc, &root) != nil {
		return ""
	}
	m := &expansion{memo: map[*yaml3.Node][2]int64{}, busy: map[*yaml3.Node]bool{}}
	nodes, size := m.measure(&root)
	if nodes > maxExpandedNodes || size > maxExpandedBytes {
		return fmt.Sprintf("YAML aliases expand this document past %d nodes or %d MiB; not read",
			maxExpandedNodes, maxExpandedBytes>>20)
	}
	return ""
}

// expansion measures nodes and scalar bytes of a node tree with every alias
// expanded, each anchor measured once. Sums saturate at the bounds, so
// they never overflow however deep the nesting.
type expansion struct {
	memo map[*yaml3.Node][2]int64
	busy map[*yaml3.Node]bool // anchors being measured: an alias to one is a cycle
}

func (m *expansion) measure(n *yaml3.Node) (nodes, size int64) {
	if v, ok := m.memo[n]; ok {
		return v[0], v[1]
	}
	if m.busy[n] {
		return maxExpandedNodes + 1, 0
	}
	m.busy[n] = true
	nodes, size = 1, int64(len(n.Value))
	if n.Kind == yaml3.AliasNode && n.Alias != nil {
		nodes, size = m.measure(n.Alias)
	}
	for _, c := range n.Content {
		cn, cs := m.measure(c)
		nodes, size = min(nodes+cn, maxExpandedNodes+1), min(size+cs, maxExpandedBytes+1)
	}
	delete(m.busy, n)
	m.memo[n] = [2]int64{nodes, size}
	return nodes, size
}
