package reducer

import (
	"strings"
	"testing"
)

// TestPeerSourcesPrefix: sourceKeys finds a BGPPeer's sources by prefix
// scan, so every source key of a peer starts with peerSources(peer), and
// no other peer's key does (peer "a" must not collect peer "ab"'s).
func TestPeerSourcesPrefix(t *testing.T) {
	for _, k := range []string{forwardSource("a", "n"), reverseSource("a", "n"), peerIPSource("a")} {
		if !strings.HasPrefix(k, peerSources("a")) {
			t.Errorf("%q does not start with %q", k, peerSources("a"))
		}
	}
	for _, k := range []string{forwardSource("ab", "n"), reverseSource("ab", "n"), peerIPSource("ab"), meshSource("a")} {
		if strings.HasPrefix(k, peerSources("a")) {
			t.Errorf("%q starts with peer a's prefix %q", k, peerSources("a"))
		}
	}
	if !strings.HasPrefix(sourceBucket(forwardSource("a", "n")), sourceBucket(peerSources("a"))) {
		t.Error("a peer's source problem buckets do not share its prefix")
	}
}
