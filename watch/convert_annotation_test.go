package watch

import (
	"reflect"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestPeerAnnotationsFromCluster: a BGPPeer as the dynamic client lists it,
// in either API group, keeps the agent's own annotation as written (the
// reducer judges it, docs/routes.md §9.9) and no other.
func TestPeerAnnotationsFromCluster(t *testing.T) {
	decode := calicoDecoder(Peer)
	for _, group := range []string{GroupCRD, GroupV3} {
		for _, tc := range []struct {
			name string
			ann  map[string]string
			want map[string]string
		}{
			{name: "max-prefixes", ann: map[string]string{state.AnnotationMaxPrefixes: "500",
				"kubectl.kubernetes.io/last-applied-configuration": "{}"},
				want: map[string]string{state.AnnotationMaxPrefixes: "500"}},
			{name: "max-prefixes-invalid-kept-as-written", ann: map[string]string{state.AnnotationMaxPrefixes: " lots"},
				want: map[string]string{state.AnnotationMaxPrefixes: " lots"}},
			{name: "other-annotations-only", ann: map[string]string{"example.com/x": "1"}},
			{name: "none"},
		} {
			t.Run(group+"/"+tc.name, func(t *testing.T) {
				u := calicoObject(group, "BGPPeer", "tor", "1", testPeerSpec(65001, "192.0.2.1"))
				u.SetAnnotations(tc.ann)
				p, err := decode(u)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(p.Annotations, tc.want) || len(p.Unsupported) > 0 {
					t.Errorf("decoded as %+v, want annotations %v", p, tc.want)
				}
			})
		}
	}
}
