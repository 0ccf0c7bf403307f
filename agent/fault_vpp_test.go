package agent

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/effects/vpp"
	"github.com/peeragent/peeragent/state"
)

// vppFaults answers through govpp's mock adapter: our FIB source is
// added with id 40, dumps are empty, and of the ip_route_add_del_v2
// requests the first `failures` get VPP retval -6, the rest succeed.
type vppFaults struct {
	adapter  *mock.VppAdapter
	mu       sync.Mutex
	failures int
	requests int
}

func (f *vppFaults) reply(req mock.MessageDTO) ([]byte, uint16, bool) {
	var reply api.Message
	ping, _ := f.adapter.GetMsgID("control_ping", "") // the mock gives pings no name
	switch {
	case req.MsgID == ping:
		reply = &memclnt.ControlPingReply{} // ends every dump: none has details
	case req.MsgName == "fib_source_add":
		reply = &fib.FibSourceAddReply{ID: 40}
	case req.MsgName == "ip_route_add_del_v2":
		msg := &ip.IPRouteAddDelV2{}
		if codec.DefaultCodec.DecodeMsg(req.Data, msg) != nil || msg.Route.Src != 40 {
			return nil, 0, false
		}
		f.mu.Lock()
		f.requests++
		rv := int32(0)
		if f.requests <= f.failures {
			rv = -6
		}
		f.mu.Unlock()
		reply = &ip.IPRouteAddDelV2Reply{Retval: rv}
	default:
		return nil, 0, false
	}
	data, err := f.adapter.ReplyBytes(req, reply)
	if err != nil {
		return nil, 0, false
	}
	id, _ := f.adapter.GetMsgID(reply.GetMessageName(), reply.GetCrcString())
	return data, id, true
}

// TestVPPErrorsAreRetriedUntilApplied: VPP refuses a reachableBy route (a
// route table entry, docs/routes.md §9.7 rule 3) twice; the failure shows
// in /state and /metrics, the retry scheduler re-issues it, and the route
// ends applied.
func TestVPPErrorsAreRetriedUntilApplied(t *testing.T) {
	f := &vppFaults{adapter: mock.NewVppAdapter(), failures: 2}
	f.adapter.MockReplyHandler(f.reply)
	conn, err := core.Connect(f.adapter)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	exec, err := vpp.Attach(context.Background(), conn, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: &fakeSpeaker{},
		Dataplane: exec, Secrets: &fakeSecrets{watched: map[string]bool{}}, Log: discardLogger()})
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()

	acts := labActions()
	acts[3] = state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{
		{Name: "tor", PeerIP: "10.0.0.9", ASNumber: 65000, ReachableBy: "10.0.0.254"}}}
	for _, a := range acts {
		l.Dispatch(a)
	}
	l.Dispatch(effects.ListRoutes(context.Background(), exec))
	sawFailed := false
	host := state.PrefixKey(netip.MustParsePrefix("10.0.0.9/32"))
	waitFor(t, "the route applied after its retries", func() bool {
		_, body := get(t, srv.URL+"/state")
		if strings.Contains(body, `"phase": "failed"`) && strings.Contains(body, "VPP retval -6") {
			sawFailed = true
		}
		r, ok := l.State().Out.Routes.Get(host)
		return ok && r.Phase == state.RoutePhaseApplied && r.Origin == "bgppeer/tor"
	})
	if !sawFailed {
		t.Error("/state never showed the failed route with VPP's error")
	}
	_, metrics := get(t, srv.URL+"/metrics")
	for _, want := range []string{`peeragent_effects_total{kind="route-replace",result="failed"} 2`,
		`peeragent_effects_total{kind="route-replace",result="applied"} 1`, "peeragent_retries_total 2"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.requests != 3 {
		t.Errorf("VPP got %d ip_route_add_del_v2, want 3 (two refused, one applied)", f.requests)
	}
}
