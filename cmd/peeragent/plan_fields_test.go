package main

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/fieldcov"
	"github.com/peeragent/peeragent/state"
)

// notInPlan are the fields of state.Neighbor that `peeragent plan` does not
// show per neighbor, and why. Every other field must appear in PlanNeighbor
// under its /state (json) name and follow the neighbor, or the plan, which
// is a stable interface, would silently lag behind the State.
var notInPlan = map[string]string{
	"PasswordRef": "the plan shows the password's fingerprint; a missing Secret shows as a problem",
	"Policy":      "the plan's effects list the policy calls",
	"Waiting":     "the plan lists only neighbors that are configured (Active)",
}

func TestPlanNeighborCoversEveryNeighborField(t *testing.T) {
	base := state.Neighbor{Address: netip.MustParseAddr("10.0.0.2"), Port: 179, PeerASN: 65001,
		LocalASN: 64512, Families: []string{"ipv4-unicast", "ipv6-unicast"}, Filters: []string{"a", "b"}}
	want := planNeighbor(&base)
	fieldcov.Form[state.Neighbor]{
		What: "the plan's PlanNeighbor", Names: fieldcov.JSONNames(PlanNeighbor{}), Omitted: notInPlan,
		Fix: "add it to PlanNeighbor and planNeighbor (cmd/peeragent/plan.go)",
		Shows: func(changed state.Neighbor, _ fieldcov.Field) error {
			return unchanged(planNeighbor(&changed), want)
		},
	}.Check(t, base)
}

// unchanged is an error when got, the plan form of a value with one field
// changed, is still want, the form of the value before.
func unchanged(got, want any) error {
	if reflect.DeepEqual(got, want) {
		return errors.New("its plan form stays the same")
	}
	return nil
}

// TestStatusReadsNeighborFields: status decodes the /state dump, so each
// field it reads must be a field of the dumped state.Neighbor; a renamed
// one would decode as empty and show "-" without an error.
func TestStatusReadsNeighborFields(t *testing.T) {
	known := fieldcov.JSONNames(state.Neighbor{})
	for _, f := range fieldcov.Of(statusNeighbor{}) {
		if !known[f.JSON] {
			t.Errorf("statusNeighbor reads %q, which state.Neighbor's /state form does not have", f.JSON)
		}
	}
}

// TestPlanPathCoversEveryPathField: every field of state.Path shows in
// PlanPath under its /state (json) name and follows the path, as
// TestPlanNeighborCoversEveryNeighborField for neighbors.
func TestPlanPathCoversEveryPathField(t *testing.T) {
	base := state.AdvertisedPath{Path: state.Path{Prefix: netip.MustParsePrefix("10.244.1.0/26"),
		NextHop: netip.MustParseAddr("10.0.0.1"), Communities: []string{"65000:100", "65000:0:7"},
		Origins: []string{"blockaffinity/a", "pod/ns/p"}}, To: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	want := planPath(base)
	names := fieldcov.JSONNames(PlanPath{})
	delete(names, "to") // AdvertisedPath's own field, beside the Path's
	fieldcov.Form[state.Path]{
		What: "the plan's PlanPath", Names: names, Fix: "add it to PlanPath and planPath (cmd/peeragent/plan.go)",
		Shows: func(changed state.Path, _ fieldcov.Field) error {
			return unchanged(planPath(state.AdvertisedPath{Path: changed, To: base.To}), want)
		},
	}.Check(t, base.Path)
}
