package vpp

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/wait"
	"github.com/peeragent/peeragent/state"
)

// restartableVPP is govpp's mock adapter playing a VPP that can go away:
// while down it refuses connections and its health-check pings go
// unanswered in kind (a reply of the wrong type), as after a crash.
type restartableVPP struct {
	t       *testing.T
	adapter *mock.VppAdapter
	mu      sync.Mutex
	down    bool
	source  bool           // our FIB source is registered
	routes  []netip.Prefix // every ip_route_add_del_v2 of our source received
	sent    chan struct{}  // closed and replaced on each
}

func newRestartableVPP(t *testing.T) *restartableVPP {
	v := &restartableVPP{t: t, adapter: mock.NewVppAdapter(), sent: make(chan struct{})}
	v.adapter.MockReplyHandler(v.reply)
	return v
}

func (v *restartableVPP) reply(req mock.MessageDTO) ([]byte, uint16, bool) {
	v.mu.Lock()
	down := v.down
	v.mu.Unlock()
	ping, _ := v.adapter.GetMsgID("control_ping", "") // the mock gives pings no name
	switch {
	case req.MsgID == ping:
		if down {
			return nil, 0, false // the mock's default reply: not a control_ping_reply
		}
		r := &memclnt.ControlPingReply{}
		data, _ := v.adapter.ReplyBytes(req, r)
		id, _ := v.adapter.GetMsgID(r.GetMessageName(), r.GetCrcString())
		return data, id, true
	case req.MsgName == "fib_source_dump":
		v.mu.Lock()
		registered := v.source
		v.mu.Unlock()
		if !registered {
			return nil, 0, false // no details: the stream ends with the ping's reply
		}
		return v.answer(req, &fib.FibSourceDetails{Src: fib.FibSource{ID: restartableSource, Priority: SourcePriority, Name: SourceName}})
	case req.MsgName == "fib_source_add":
		v.mu.Lock()
		v.source = true
		v.mu.Unlock()
		return v.answer(req, &fib.FibSourceAddReply{ID: restartableSource})
	case req.MsgName == "ip_route_add_del_v2":
		msg := &ip.IPRouteAddDelV2{}
		if err := codec.DefaultCodec.DecodeMsg(req.Data, msg); err != nil {
			v.t.Errorf("decode: %v", err)
		}
		v.mu.Lock()
		var retval int32
		if !v.source || msg.Route.Src != restartableSource {
			retval = noSuchFIB // a route of a source this VPP does not know
		} else {
			v.routes = append(v.routes, netip.MustParsePrefix(msg.Route.Prefix.String()))
			close(v.sent)
			v.sent = make(chan struct{})
		}
		v.mu.Unlock()
		return v.answer(req, &ip.IPRouteAddDelV2Reply{Retval: retval})
	}
	return nil, 0, false
}

func (v *restartableVPP) answer(req mock.MessageDTO, r api.Message) ([]byte, uint16, bool) {
	data, err := v.adapter.ReplyBytes(req, r)
	if err != nil {
		v.t.Errorf("encode %s: %v", r.GetMessageName(), err)
		return nil, 0, false
	}
	id, _ := v.adapter.GetMsgID(r.GetMessageName(), r.GetCrcString())
	return data, id, true
}

// restartableSource is the id VPP gives our FIB source.
const restartableSource = 30

// setDown stops or starts VPP; a stopped VPP forgets its FIB sources.
func (v *restartableVPP) setDown(down bool) {
	v.mu.Lock()
	v.down = down
	if down {
		v.source = false
	}
	v.mu.Unlock()
}

// refusingAdapter is the mock adapter refusing connections while v is
// down (the mock's own MockConnectError is not safe to change while
// govpp reconnects).
type refusingAdapter struct {
	*mock.VppAdapter
	v *restartableVPP
}

func (a refusingAdapter) Connect() error {
	a.v.mu.Lock()
	down := a.v.down
	a.v.mu.Unlock()
	if down {
		return errors.New("connection refused")
	}
	return a.VppAdapter.Connect()
}

func (v *restartableVPP) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.routes)
}

// problems collects the VPP connection problems Run dispatches.
type problems struct {
	mu      sync.Mutex
	last    []state.Problem
	seen    []string
	other   []state.Action
	changed chan struct{}
}

func (p *problems) dispatch(a state.Action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := a.(state.InputProblemsReported); ok && ip.Source == "vpp" {
		p.last = ip.Problems
		for _, x := range ip.Problems {
			p.seen = append(p.seen, x.Reason)
		}
	} else {
		p.other = append(p.other, a)
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *problems) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		ok, ch := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("timed out waiting for %s; problems seen: %q", what, p.seen)
		}
	}
}

// TestDialWaitsAndReplaysAfterRestart (it shortens govpp's health-check
// interval and the backoff for the whole test binary): an Executor from Dial is not
// connected until VPP answers (a problem meanwhile, no exit); once
// connected, the problem is cleared and routes apply; when VPP goes away
// there is a problem again, and when it is back (having forgotten our FIB
// source) the source is registered again and then every route it had is
// sent again, under our source.
func TestDialWaitsAndReplaysAfterRestart(t *testing.T) {
	core.HealthCheckProbeInterval = 20 * time.Millisecond
	minBackoff, maxBackoff, connectEvery = 10*time.Millisecond, 50*time.Millisecond, 10*time.Millisecond
	v := newRestartableVPP(t)
	v.setDown(true) // no VPP yet
	e := dialWith(refusingAdapter{v.adapter, v}, "mock", slog.New(slog.DiscardHandler))
	p := &problems{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, p.dispatch) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	p.waitFor(t, "a problem while VPP is absent", func() bool { return len(p.last) == 1 })
	res := e.Execute(context.Background(), []effects.Effect{replace(host(nbr4), gw4, 7)})
	if f, ok := res[0].(state.TableRouteApplyFailed); !ok || !strings.Contains(f.Error, "not connected to VPP") {
		t.Fatalf("route while disconnected: %#v", res[0])
	}

	v.setDown(false)
	p.waitFor(t, "the problem cleared once VPP answers", func() bool { return len(p.last) == 0 })
	var res2 []state.Action
	wait.Until(t, "the FIB source registered", 20*time.Second, func() bool {
		res2 = e.Execute(context.Background(), []effects.Effect{replace(host(nbr4), gw4, 8)})
		_, ok := res2[0].(state.TableRouteApplied)
		return ok
	})
	if len(res2) != 1 {
		t.Fatalf("route while connected: %#v", res2)
	}
	if n := v.count(); n != 1 {
		t.Fatalf("VPP got %d routes, want 1", n)
	}

	v.setDown(true) // VPP stops
	p.waitFor(t, "a problem once VPP is gone", func() bool {
		return len(p.last) == 1 && (strings.Contains(p.last[0].Reason, "disconnected") || strings.Contains(p.last[0].Reason, "stopped answering") || strings.Contains(p.last[0].Reason, "not reachable"))
	})
	t.Logf("while VPP is away: %s", p.last[0].Reason)
	v.setDown(false) // VPP is back, without routes
	p.waitFor(t, "the problem cleared after the restart", func() bool { return len(p.last) == 0 })
	deadline := time.After(20 * time.Second)
	for v.count() < 2 {
		v.mu.Lock()
		ch := v.sent
		v.mu.Unlock()
		if v.count() >= 2 {
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the route was not sent again after the restart")
		}
	}
	v.mu.Lock()
	got := v.routes
	v.mu.Unlock()
	if got[1] != host(nbr4) {
		t.Errorf("replayed %v, want %s", got[1], host(nbr4))
	}
	if len(p.other) != 0 {
		t.Errorf("replay failures dispatched: %v", p.other)
	}
}
