package agent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// blockingSpeaker applies like fakeSpeaker, but an Execute waits while
// hold is set.
type blockingSpeaker struct {
	fakeSpeaker
	mu   sync.Mutex
	hold chan struct{} // nil: no wait
}

func (b *blockingSpeaker) Execute(ctx context.Context, effs []effects.Effect) []state.Action {
	b.mu.Lock()
	h := b.hold
	b.mu.Unlock()
	if h != nil {
		<-h
	}
	return b.fakeSpeaker.Execute(ctx, effs)
}

func (b *blockingSpeaker) block() func() {
	h := make(chan struct{})
	b.mu.Lock()
	b.hold = h
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.hold = nil
			b.mu.Unlock()
			close(h)
		})
	}
}

// gate blocks the loop in a Published function while it is shut.
type gate struct {
	mu   sync.Mutex
	hold chan struct{} // nil: open
}

func (g *gate) wait() {
	g.mu.Lock()
	h := g.hold
	g.mu.Unlock()
	if h != nil {
		<-h
	}
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold == nil {
		g.hold = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
}

// healthLoop runs a loop with a 50 ms stuck threshold that waits at g
// when it publishes a State (a Published function runs within the step).
func healthLoop(t *testing.T, sp effects.Executor, g *gate) (*Loop, *httptest.Server) {
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: sp,
		Secrets: &fakeSecrets{watched: map[string]bool{}}, Log: discardLogger(), StuckAfter: 50 * time.Millisecond,
		Published: []func(state.State){func(state.State) { g.wait() }}})
	srv := httptest.NewServer(Handler(l))
	t.Cleanup(func() { g.open(); srv.Close() }) // before runLoop's cleanup: g must not hold the loop
	return l, srv
}

func waitStatus(t *testing.T, url string, code int, want string) {
	t.Helper()
	var got int
	var body string
	waitFor(t, url+" "+want, func() bool {
		got, body = get(t, url)
		return got == code && strings.Contains(body, want)
	})
}

// TestHealthzFailsWhileStuck: /healthz is 503 while the loop cannot take
// its actions and while an effects batch does not return, and 200 again
// once they move; the speaker failing to start fails /healthz and
// /readyz until it starts.
func TestHealthzFailsWhileStuck(t *testing.T) {
	sp := &blockingSpeaker{}
	g := &gate{}
	l, srv := healthLoop(t, sp, g)
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "ready", l.Ready)
	waitStatus(t, srv.URL+"/healthz", 200, "ok")

	t.Run("loop-stuck", func(t *testing.T) {
		g.shut()
		l.Dispatch(state.SourceSynced{Kind: state.KindBGPFilter}) // publishing its State holds the loop
		waitStatus(t, srv.URL+"/healthz", 503, "loop stuck: one step has run")
		l.Dispatch(state.SourceSynced{Kind: state.KindBGPFilter}) // this one waits
		waitStatus(t, srv.URL+"/healthz", 503, "loop stuck: an action has waited")
		g.open()
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
	})
	t.Run("effects-stuck", func(t *testing.T) {
		release := sp.block()
		t.Cleanup(release)
		l.Dispatch(state.PeerUpserted{Peer: state.BGPPeer{Name: "tor-2", PeerIP: "10.0.0.10", ASNumber: 65000}})
		waitStatus(t, srv.URL+"/healthz", 503, "effects stuck")
		release()
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
	})
	t.Run("speaker-down", func(t *testing.T) {
		s := l.State().Server
		l.Dispatch(state.ServerApplyFailed{Server: s, Error: "start server: listen tcp 0.0.0.0:179: address already in use"})
		waitStatus(t, srv.URL+"/healthz", 503, "speaker down: start server: listen tcp")
		waitStatus(t, srv.URL+"/readyz", 503, "speaker down")
		l.Dispatch(state.ServerApplied{Server: s})
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
		waitStatus(t, srv.URL+"/readyz", 200, "ready")
	})
	// Another BGP speaker holding the port (calico-node's BIRD) is not a
	// health failure: a restart would not free the port, and the kubelet
	// would restart the agent in a loop. /readyz says why it is not ready.
	t.Run("another-speaker-holds-the-port", func(t *testing.T) {
		s := l.State().Server
		const why = "start server (as 64512): another BGP speaker holds port 179: a listener answers on 10.0.0.1:179"
		l.Dispatch(state.ServerApplyFailed{Server: s, OtherSpeaker: true, Error: why})
		waitStatus(t, srv.URL+"/readyz", 503, "not ready: speaker down: "+why)
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
		l.Dispatch(state.ServerApplyFailed{Server: s, Error: "start server: too many open files"})
		waitStatus(t, srv.URL+"/healthz", 503, "speaker down: start server: too many open files")
		l.Dispatch(state.ServerApplyFailed{Server: s, OtherSpeaker: true, Error: why})
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
		l.Dispatch(state.ServerApplied{Server: s})
		waitStatus(t, srv.URL+"/readyz", 200, "ready")
		waitStatus(t, srv.URL+"/healthz", 200, "ok")
	})
}

// TestServeBounds: the admin server has read, write and idle timeouts.
func TestServeBounds(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(ln, http.NotFoundHandler(), DefaultMaxConns)
	defer srv.Close()
	if srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.ReadHeaderTimeout <= 0 {
		t.Errorf("timeouts: read %v write %v idle %v header %v", srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.ReadHeaderTimeout)
	}
	if code, _ := get(t, "http://"+ln.Addr().String()+"/x"); code != http.StatusNotFound {
		t.Errorf("status %d", code)
	}
}
