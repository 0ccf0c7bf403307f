package gobgp

import (
	"context"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	api "github.com/osrg/gobgp/v4/api"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// snapshot is the speaker's configuration as text: peers (without their
// run-time state), policies, defined sets and the global assignments.
func snapshot(t *testing.T, e *Executor) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	add := func(kind string, m proto.Message) {
		out = append(out, kind+" "+prototext.MarshalOptions{}.Format(m))
	}
	err := e.Speaker().ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		c := proto.Clone(p).(*api.Peer)
		c.State, c.Timers = nil, nil
		for _, a := range c.AfiSafis {
			a.State = nil
			a.MpGracefulRestart.State = nil
		}
		add("peer", c)
	})
	if err != nil {
		t.Fatalf("ListPeer: %v", err)
	}
	if err := e.Speaker().ListPolicy(ctx, &api.ListPolicyRequest{}, func(p *api.Policy) { add("policy", p) }); err != nil {
		t.Fatalf("ListPolicy: %v", err)
	}
	for _, typ := range []api.DefinedType{api.DefinedType_DEFINED_TYPE_PREFIX, api.DefinedType_DEFINED_TYPE_NEIGHBOR} {
		if err := e.Speaker().ListDefinedSet(ctx, &api.ListDefinedSetRequest{DefinedType: typ}, func(d *api.DefinedSet) { add("set", d) }); err != nil {
			t.Fatalf("ListDefinedSet: %v", err)
		}
	}
	if e.running != nil {
		err = e.Speaker().ListPolicyAssignment(ctx, &api.ListPolicyAssignmentRequest{Name: globalTable}, func(a *api.PolicyAssignment) { add("assignment", a) })
		if err != nil {
			t.Fatalf("ListPolicyAssignment: %v", err)
		}
	}
	sort.Strings(out)
	return out
}

// changes counts GoBGP's log lines for calls that change something.
func changes(logs *logBuf) map[string]int {
	out := map[string]int{}
	for _, m := range []string{"Add a peer configuration", "Delete a peer configuration", "Neighbor soft reset"} {
		out[m] = strings.Count(logs.String(), m)
	}
	return out
}

func testPolicy() state.Policy {
	return state.Policy{
		NextHop: "self",
		Import:  []state.Rule{{Filter: "f", Action: "reject", Operator: "In", Prefix: netip.MustParsePrefix("10.10.0.0/16")}},
		Export:  []state.Rule{{Filter: "f", Action: "accept", FromRemotePeers: true}},
	}
}

// passiveNeighbor never dials, so a test needs no remote speaker.
func passiveNeighbor(addr string, as uint32) *state.Neighbor {
	return &state.Neighbor{
		Address: netip.MustParseAddr(addr), Port: 179, PeerASN: as, LocalASN: 64512, Passive: true,
		EBGPMultihopTTL: 255, GracefulRestartSeconds: 120, Families: []string{"ipv4-unicast"},
	}
}

func TestExecuteIsIdempotent(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	start := effects.StartServer{Server: sp.server(64512)}
	mustApply(t, sp.Executor, start)
	n1, n2 := passiveNeighbor("10.0.0.2", 64513), passiveNeighbor("10.0.0.3", 64514)
	n1.Password = state.NewPassword("idempotent-secret")
	add := []effects.Effect{
		start,
		effects.SetPolicy{Addr: n1.Address, Policy: testPolicy(), Gen: 1},
		effects.AddPeer{Neighbor: n1, Gen: 1},
		effects.AddPeer{Neighbor: n2, Gen: 2},
	}
	mustApply(t, sp.Executor, add...)
	before, count := snapshot(t, sp.Executor), changes(sp.logs)

	res := mustApply(t, sp.Executor, add...)
	res = append(res, mustApply(t, sp.Executor, effects.UpdatePeer{Old: n1, New: n1, Gen: 3})...)
	want := []state.Action{
		state.ServerApplied{Server: start.Server},
		state.PeerApplied{Address: n1.Address, Gen: 1}, state.PeerApplied{Address: n2.Address, Gen: 2},
		state.PeerApplied{Address: n1.Address, Gen: 3},
	}
	if d := cmp.Diff(want, withoutTimes(res), addrs); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, snapshot(t, sp.Executor)); d != "" {
		t.Errorf("applying again changed the speaker (-before +after):\n%s", d)
	}
	if d := cmp.Diff(count, changes(sp.logs)); d != "" {
		t.Errorf("applying again made changing calls (-before +after):\n%s", d)
	}

	del := []effects.Effect{effects.DeletePeer{Addr: n1.Address, Gen: 4}, effects.DeletePolicy{Addr: n1.Address, Gen: 4},
		effects.DeletePeer{Addr: n2.Address, Gen: 5}}
	mustApply(t, sp.Executor, del...)
	mustApply(t, sp.Executor, del...)
	mustApply(t, sp.Executor, effects.DeletePeer{Addr: netip.MustParseAddr("10.9.9.9"), Gen: 6})
	if left := snapshot(t, sp.Executor); strings.Contains(strings.Join(left, "\n"), "10.0.0") {
		t.Errorf("deleted neighbors left objects behind:\n%s", strings.Join(left, "\n"))
	}
}

// addrs lets cmp compare the netip values inside Actions.
var addrs = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

func TestExecuteReportsEachNeighborOnce(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	good := passiveNeighbor("10.0.0.4", 64513)
	early := sp.Execute(context.Background(), []effects.Effect{
		effects.AddPeer{Neighbor: good, Gen: 1},
		effects.SetPolicy{Addr: good.Address, Policy: testPolicy(), Gen: 2},
		effects.DeletePeer{Addr: good.Address, Gen: 3},
		effects.DeletePolicy{Addr: good.Address, Gen: 4},
	})
	wantEarly := []state.Action{
		state.PeerApplyFailed{Address: good.Address, Gen: 1, Error: "add peer 10.0.0.4 (AS 64513): bgp server hasn't started yet"},
		state.PeerApplyFailed{Address: good.Address, Gen: 2, Error: "set policy 10.0.0.4: bgp server hasn't started yet"},
		state.PeerApplied{Address: good.Address, Gen: 3}, state.PeerApplied{Address: good.Address, Gen: 4},
	}
	if d := cmp.Diff(wantEarly, withoutTimes(early), addrs); d != "" {
		t.Errorf("before the server starts (-want +got):\n%s", d)
	}

	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	badFamily, badPolicy := passiveNeighbor("10.0.0.2", 64513), passiveNeighbor("10.0.0.3", 64513)
	badFamily.Families = []string{"ipv4-bogus"}
	secret := passiveNeighbor("10.0.0.5", 64515)
	secret.Password = state.NewPassword("hunter2-never-shown")
	secret.RouteReflectorClient, secret.RouteReflectorClusterID = true, "not-a-cluster-id"
	res := sp.Execute(context.Background(), []effects.Effect{
		effects.AddPeer{Neighbor: badFamily, Gen: 5},
		effects.SetPolicy{Addr: badPolicy.Address, Policy: state.Policy{Import: []state.Rule{{Action: "maybe"}}}, Gen: 6},
		effects.AddPeer{Neighbor: badPolicy, Gen: 6},
		effects.ReplaceRoute{Route: state.Route{Prefix: netip.MustParsePrefix("10.0.0.4/32"), Via: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}, Gen: 7},
		effects.WatchSecret{Namespace: "ns", Name: "s"},
		effects.AddPeer{Neighbor: good, Gen: 7},
		effects.AddPeer{Neighbor: secret, Gen: 8},
	})
	want := []state.Action{
		state.PeerApplyFailed{Address: badFamily.Address, Gen: 5, Error: `add peer 10.0.0.2 (AS 64513): unknown address family "ipv4-bogus"`},
		state.PeerApplyFailed{Address: badPolicy.Address, Gen: 6, Error: `set policy 10.0.0.3: import: rule 1: action "maybe" is not accept or reject`},
		state.PeerApplied{Address: good.Address, Gen: 7},
		state.PeerApplyFailed{Address: secret.Address, Gen: 8, Error: "add peer 10.0.0.5 (AS 64515): route-reflector-cluster-id should be specified as IPv4 address or 32-bit unsigned integer"},
	}
	if d := cmp.Diff(want, withoutTimes(res), addrs); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	if _, ok, _ := sp.currentPeer(context.Background(), badPolicy.Address); ok {
		t.Errorf("the peer of a neighbor whose policy failed was added anyway")
	}
	if strings.Contains(sp.logs.String(), "hunter2") {
		t.Errorf("a password reached the logs")
	}
}

// TestServerEffects: start is idempotent and recovers from a failed bind,
// restart wipes peers and policies, stop is idempotent.
func TestServerEffects(t *testing.T) {
	requireLoopback(t, "127.0.0.3")
	sp := newSpeaker(t, "127.0.0.1")
	sp.listen = []string{"127.0.0.1", "127.0.0.3"}
	busy, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.3", itoa(sp.port)))
	if err != nil {
		t.Fatalf("occupy the port: %v", err)
	}
	srv := sp.server(64512)
	res := sp.Execute(context.Background(), []effects.Effect{effects.StartServer{Server: srv}})
	f, ok := res[0].(state.ServerApplyFailed)
	if !ok || !f.OtherSpeaker || !strings.HasPrefix(f.Error, "start server (AS 64512, router ID 127.0.0.1, port "+itoa(sp.port)+"): ") ||
		!strings.Contains(f.Error, "another BGP speaker holds port "+itoa(sp.port)+": a listener answers on 127.0.0.3:") {
		t.Fatalf("want a start failure naming the server, got %#v", res)
	}
	busy.Close()
	mustApply(t, sp.Executor, effects.StartServer{Server: srv})
	mustApply(t, sp.Executor, effects.StartServer{Server: srv})

	n := passiveNeighbor("10.0.0.2", 64513)
	mustApply(t, sp.Executor, effects.SetPolicy{Addr: n.Address, Policy: testPolicy(), Gen: 1}, effects.AddPeer{Neighbor: n, Gen: 1})
	moved := srv
	moved.ASN = 64600
	mustApply(t, sp.Executor, effects.RestartServer{Old: srv, New: moved})
	if left := snapshot(t, sp.Executor); strings.Contains(strings.Join(left, "\n"), "10.0.0.2") {
		t.Errorf("a restarted speaker kept configuration:\n%s", strings.Join(left, "\n"))
	}
	mustApply(t, sp.Executor, effects.SetPolicy{Addr: n.Address, Policy: testPolicy(), Gen: 2}, effects.AddPeer{Neighbor: n, Gen: 2})
	g, err := sp.Speaker().GetBgp(context.Background(), &api.GetBgpRequest{})
	if err != nil || g.Global.Asn != 64600 {
		t.Fatalf("after restart GetBgp = %v, %v", g, err)
	}

	stop := effects.StopServer{Old: moved}
	for range 2 {
		if got := mustApply(t, sp.Executor, stop, effects.DeletePeer{Addr: n.Address, Gen: 3}); !cmp.Equal(withoutTimes(got),
			[]state.Action{state.ServerApplied{}, state.PeerApplied{Address: n.Address, Gen: 3}}, addrs) {
			t.Errorf("stop: %v", got)
		}
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }

func TestExecuteAfterCancelFailsEachNeighbor(t *testing.T) {
	sp := newSpeaker(t, "127.0.0.1")
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n := passiveNeighbor("10.0.0.2", 64513)
	got := sp.Execute(ctx, []effects.Effect{effects.AddPeer{Neighbor: n, Gen: 1}})
	want := []state.Action{state.PeerApplyFailed{Address: n.Address, Gen: 1, Error: "add peer 10.0.0.2 (AS 64513): context canceled"}}
	if d := cmp.Diff(want, withoutTimes(got), addrs); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
}
