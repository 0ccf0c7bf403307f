package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/internal/testrig/probe"
	"github.com/peeragent/peeragent/internal/testrig/wait"
	"github.com/peeragent/peeragent/state"
)

// fakeSpeaker applies every effect and records them.
type fakeSpeaker struct {
	mu   sync.Mutex
	seen []string
}

func (f *fakeSpeaker) Execute(_ context.Context, effs []effects.Effect) []state.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []state.Action
	done := map[string]bool{}
	for _, e := range effs {
		f.seen = append(f.seen, e.String())
		r := e.Ref()
		if r.Kind != effects.KindAddPeer && r.Kind != effects.KindUpdatePeer && r.Kind != effects.KindDeletePeer {
			continue
		}
		if k := r.Addr.String(); !done[k] {
			done[k] = true
			out = append(out, state.PeerApplied{Address: r.Addr, Gen: r.Gen})
		}
	}
	return out
}

func (f *fakeSpeaker) effects() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

type fakeSecrets struct {
	mu      sync.Mutex
	watched map[string]bool
}

func (f *fakeSecrets) Watch(n string)   { f.mu.Lock(); f.watched[n] = true; f.mu.Unlock() }
func (f *fakeSecrets) Unwatch(n string) { f.mu.Lock(); delete(f.watched, n); f.mu.Unlock() }

const testPassword = "loop-test-password"

func labActions() []state.Action {
	return []state.Action{
		state.SourceSynced{Kind: state.KindNode, Nodes: []state.Node{
			{Name: "node-a", IPv4Address: "10.0.0.1/24"}, {Name: "node-b", IPv4Address: "10.0.0.2/24"}}},
		state.SourceSynced{Kind: state.KindBGPConfiguration},
		state.SourceSynced{Kind: state.KindBGPFilter},
		state.SourceSynced{Kind: state.KindBGPPeer, Peers: []state.BGPPeer{{Name: "tor", PeerIP: "10.0.0.9", ASNumber: 65000,
			Password: &state.SecretKeyRef{Name: "pw", Key: "k"}}}},
		state.SecretUpserted{Secret: state.Secret{Name: "pw", Data: map[string]state.Password{"k": state.NewPassword(testPassword)}}},
		state.SourceSynced{Kind: state.KindIPPool}, state.SourceSynced{Kind: state.KindBlockAffinity},
		state.SourceSynced{Kind: state.KindPod},
	}
}

// waitFor waits up to 10 s for cond.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, what, 10*time.Second, cond)
}

// runLoop runs a new Loop of cfg until the test ends.
func runLoop(t testing.TB, cfg LoopConfig) *Loop {
	l := NewLoop(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func startLoop(t *testing.T) (*Loop, *fakeSpeaker, *fakeSecrets) {
	sp, sec := &fakeSpeaker{}, &fakeSecrets{watched: map[string]bool{}}
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: sp, Secrets: sec,
		Journal: 100, Log: discardLogger()})
	return l, sp, sec
}

func TestLoopAppliesAndBecomesReady(t *testing.T) {
	l, sp, sec := startLoop(t)
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "ready", l.Ready)
	waitFor(t, "both sessions configured", func() bool {
		n := 0
		l.State().Out.Sessions.Range(func(_ string, s *state.Session) bool {
			if s.Phase == state.PhaseConfigured {
				n++
			}
			return true
		})
		return n == 2
	})
	if !sec.watched["pw"] {
		t.Error("secret pw is not watched")
	}
	got := strings.Join(sp.effects(), "\n")
	for _, want := range []string{"start-server", "add-peer 10.0.0.2", "add-peer 10.0.0.9"} {
		if !strings.Contains(got, want) {
			t.Errorf("effects lack %q:\n%s", want, got)
		}
	}
}

func TestHTTPEndpointsNeverShowPasswords(t *testing.T) {
	l, _, _ := startLoop(t)
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()
	if code, _ := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before sync = %d, want 503", code)
	}
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "ready", l.Ready)
	cases := []struct{ path, want string }{
		{"/state", `"password": "hmac:`},
		{"/actions", `"secretUpserted"`},
		{"/healthz", "ok"},
		{"/readyz", "ready"},
		{"/metrics", "peeragent_actions_total"},
		{"/fsm", "stateDiagram-v2"},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			code, body := get(t, srv.URL+c.path)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			if !strings.Contains(body, c.want) {
				t.Errorf("body lacks %q:\n%.2000s", c.want, body)
			}
			if strings.Contains(body, testPassword) {
				t.Errorf("password text in %s", c.path)
			}
		})
	}
}

func get(t *testing.T, url string) (int, string) { return probe.Get(t, url) }
