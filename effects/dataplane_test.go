package effects

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/peeragent/peeragent/state"
)

// recordingDataplane records its calls and fails the prefixes in fail.
type recordingDataplane struct {
	calls []string
	fail  map[netip.Prefix]bool
	own   []state.Route
}

func (d *recordingDataplane) Name() string { return "test" }

func (d *recordingDataplane) Replace(_ context.Context, r state.Route) error {
	d.calls = append(d.calls, "replace "+r.String())
	if d.fail[r.Prefix] {
		return errors.New("replace route " + r.String() + ": refused")
	}
	return nil
}

func (d *recordingDataplane) Delete(_ context.Context, p netip.Prefix) error {
	d.calls = append(d.calls, "delete "+p.String())
	if d.fail[p] {
		return errors.New("delete route " + p.String() + ": refused")
	}
	return nil
}

func (d *recordingDataplane) ListOwn(context.Context) ([]state.Route, error) { return d.own, nil }

func TestApplyRoutes(t *testing.T) {
	p1, p2 := netip.MustParsePrefix("10.244.2.0/26"), netip.MustParsePrefix("10.244.1.0/26")
	a, b := netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.2")
	effs := []Effect{
		ReplaceRoute{Route: state.Route{Prefix: p1, Via: []netip.Addr{a, b, a}}, Gen: 4},
		DeletePeer{Addr: b, Gen: 1}, // not a route: ignored
		ReplaceRoute{Route: state.Route{Prefix: p2, Drop: true}, Gen: 2},
		RemoveRoute{Prefix: netip.MustParsePrefix("10.244.3.7/26"), Gen: 3},
	}
	t.Run("applies-in-order-normalised", func(t *testing.T) {
		d := &recordingDataplane{fail: map[netip.Prefix]bool{p2: true}}
		got := ApplyRoutes(context.Background(), d, effs)
		wantCalls := []string{"replace 10.244.2.0/26 via 10.0.0.2,10.0.0.3", "replace 10.244.1.0/26 drop", "delete 10.244.3.0/26"}
		if diff := cmp.Diff(wantCalls, d.calls); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		want := []state.Action{
			state.TableRouteApplied{Prefix: p1, Gen: 4},
			state.TableRouteApplyFailed{Prefix: p2, Gen: 2, Error: "replace route 10.244.1.0/26 drop: refused"},
			state.TableRouteApplied{Prefix: netip.MustParsePrefix("10.244.3.7/26"), Gen: 3},
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y netip.Prefix) bool { return x == y }), ignoreAt); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
	})
	t.Run("one-result-per-prefix-and-generation", func(t *testing.T) {
		p3 := netip.MustParsePrefix("10.244.9.0/26")
		d := &recordingDataplane{fail: map[netip.Prefix]bool{p3: true}}
		got := ApplyRoutes(context.Background(), d, []Effect{
			ReplaceRoute{Route: state.Route{Prefix: p3, Drop: true}, Gen: 5},
			ReplaceRoute{Route: state.Route{Prefix: p1, Via: []netip.Addr{a}}, Gen: 4}, // before p3: out of order
			RemoveRoute{Prefix: p3, Gen: 5},
			ReplaceRoute{Route: state.Route{Prefix: p1, Via: []netip.Addr{b}}, Gen: 4},
			ReplaceRoute{Route: state.Route{Prefix: p3, Drop: true}, Gen: 6},
		})
		want := []state.Action{
			state.TableRouteApplyFailed{Prefix: p3, Gen: 5, Error: "replace route 10.244.9.0/26 drop: refused; delete route 10.244.9.0/26: refused"},
			state.TableRouteApplied{Prefix: p1, Gen: 4},
			state.TableRouteApplyFailed{Prefix: p3, Gen: 6, Error: "replace route 10.244.9.0/26 drop: refused"},
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y netip.Prefix) bool { return x == y }), ignoreAt); diff != "" {
			t.Errorf("results (-want +got):\n%s", diff)
		}
	})
	t.Run("none-skips-every-route", func(t *testing.T) {
		for _, r := range ApplyRoutes(context.Background(), nil, effs) {
			if ok := r.(state.TableRouteApplied).Skipped; !ok {
				t.Errorf("%#v: want skipped", r)
			}
		}
	})
}

func TestListRoutes(t *testing.T) {
	d := &recordingDataplane{own: []state.Route{
		{Prefix: netip.MustParsePrefix("fd00::/64"), Drop: true},
		{Prefix: netip.MustParsePrefix("10.244.2.1/26"), Via: []netip.Addr{netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.2")}},
		{Prefix: netip.MustParsePrefix("10.244.1.0/26"), Drop: true},
	}}
	got := ListRoutes(context.Background(), d)
	var lines []string
	for _, r := range got.Routes {
		lines = append(lines, r.String())
	}
	want := []string{"10.244.1.0/26 drop", "10.244.2.0/26 via 10.0.0.2,10.0.0.3", "fd00::/64 drop"}
	if diff := cmp.Diff(want, lines); diff != "" || got.Dataplane != "test" || got.Error != "" {
		t.Errorf("ListRoutes = %+v (-want +got lines):\n%s", got, diff)
	}
	if none := ListRoutes(context.Background(), nil); none.Dataplane != "none" || len(none.Routes) != 0 {
		t.Errorf("ListRoutes(nil) = %+v, want an empty list from none", none)
	}
}

// ignoreAt leaves out the time a failure is stamped with.
var ignoreAt = cmpopts.IgnoreFields(state.TableRouteApplyFailed{}, "At")
