package main

import (
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
	inPlan := map[string]bool{}
	for _, f := range fieldcov.Of(PlanNeighbor{}) {
		inPlan[f.JSON] = true
	}
	known := map[string]bool{}
	for _, f := range fieldcov.Of(base) {
		known[f.Name], known[f.JSON] = true, true
		if why, ok := notInPlan[f.Name]; ok {
			if inPlan[f.JSON] {
				t.Errorf("%s is in PlanNeighbor and in notInPlan (%s): pick one", f.Name, why)
			}
			continue
		}
		changed := fieldcov.Changed(base, f.Name)
		if !inPlan[f.JSON] || reflect.DeepEqual(planNeighbor(&changed), want) {
			t.Errorf("the plan does not show %s: add %q to PlanNeighbor and planNeighbor (cmd/peeragent/plan.go), "+
				"or list it in notInPlan with why", f.Name, f.JSON)
		}
	}
	for name := range inPlan {
		if !known[name] {
			t.Errorf("PlanNeighbor has %q, which is no field of state.Neighbor (its json name)", name)
		}
	}
	for name := range notInPlan {
		if !known[name] {
			t.Errorf("notInPlan names %s, which state.Neighbor no longer has", name)
		}
	}
}

// TestStatusReadsNeighborFields: status decodes the /state dump, so each
// field it reads must be a field of the dumped state.Neighbor; a renamed
// one would decode as empty and show "-" without an error.
func TestStatusReadsNeighborFields(t *testing.T) {
	known := map[string]bool{}
	for _, f := range fieldcov.Of(state.Neighbor{}) {
		known[f.JSON] = true
	}
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
	inPlan := map[string]bool{}
	for _, f := range fieldcov.Of(PlanPath{}) {
		inPlan[f.JSON] = true
	}
	known := map[string]bool{"to": true}
	for _, f := range fieldcov.Of(base.Path) {
		known[f.JSON] = true
		changed := base
		changed.Path = fieldcov.Changed(base.Path, f.Name)
		if !inPlan[f.JSON] || reflect.DeepEqual(planPath(changed), want) {
			t.Errorf("the plan does not show a path's %s: add %q to PlanPath and planPath (cmd/peeragent/plan.go)", f.Name, f.JSON)
		}
	}
	for name := range inPlan {
		if !known[name] {
			t.Errorf("PlanPath has %q, which is no field of state.Path (its json name) nor \"to\"", name)
		}
	}
}
