package effects

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// notClassified are the fields of state.Neighbor that are not speaker
// settings of the classify table, and why: a change of any other field must
// be listed by Classify, or an update would reach GoBGP unexplained (or,
// worse, be planned as "nothing changed").
var notClassified = map[string]string{
	"Address":     "the neighbor's key: another address is another neighbor",
	"Origin":      "bookkeeping: which source the neighbor came from",
	"PasswordRef": "bookkeeping: which Secret key the password came from",
	"Filters":     "bookkeeping: which BGPFilters the policy came from",
	"Policy":      "its own effects (policy and defined-set calls), never an UpdatePeer",
	"ReachableBy": "a route table entry (docs/routes.md §9.7 rule 3), not a speaker setting",
	"Waiting":     "holds the neighbor back: AddPeer or DeletePeer, never an update",
}

func TestClassifyCoversEveryNeighborField(t *testing.T) {
	base := state.Neighbor{Address: netip.MustParseAddr("10.0.0.2"), Port: 179, PeerASN: 65001,
		LocalASN: 64512, SourceAddress: netip.MustParseAddr("10.0.0.1"), EBGPMultihopTTL: 2,
		GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast", "ipv6-unicast"}}
	inTable := map[string]bool{}
	for _, f := range fields {
		inTable[f.name] = true
	}
	fieldcov.Form[state.Neighbor]{
		What: "the classify table", Names: inTable, Omitted: notClassified,
		Fix: "add it to the fields table (effects/classify.go, with whether it resets the session)",
		Shows: func(changed state.Neighbor, f fieldcov.Field) error {
			if got, _ := Classify(&base, &changed); len(got) != 1 || got[0].Field != f.JSON {
				return fmt.Errorf("Classify lists %v, want one change named %q", got, f.JSON)
			}
			return nil
		},
	}.Check(t, base)
}
