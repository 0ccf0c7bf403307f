package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// inspectingSpeaker is a fakeSpeaker that also answers Inspect with fixed
// route counts for every address it was asked to add, and counts the calls.
type inspectingSpeaker struct {
	fakeSpeaker
	inspects atomic.Int64
}

func (f *inspectingSpeaker) Inspect(_ context.Context, addr netip.Addr, advertised bool) ([]effects.NeighborInfo, error) {
	f.inspects.Add(1)
	var out []effects.NeighborInfo
	for _, a := range []string{"10.0.0.2", "10.0.0.9"} {
		if addr.IsValid() && addr.String() != a {
			continue
		}
		n := effects.NeighborInfo{Address: mustAddr(a), State: "established", Received: 5, Accepted: 4,
			HoldTime: 90, KeepaliveInterval: 30, RemoteCapabilities: []string{"route-refresh"}}
		if advertised {
			adv := uint64(3)
			n.Advertised = &adv
		}
		out = append(out, n)
	}
	return out, nil
}

func startInspectedLoop(t *testing.T) *Loop {
	t.Helper()
	l, _ := startInspectedLoopWith(t)
	return l
}

func startInspectedLoopWith(t *testing.T) (*Loop, *inspectingSpeaker) {
	t.Helper()
	sp := &inspectingSpeaker{}
	l := runLoop(t, LoopConfig{Initial: state.New("node-a", state.Options{}), Speaker: sp,
		Secrets: &fakeSecrets{watched: map[string]bool{}}, Journal: 100, Log: discardLogger()})
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "ready", l.Ready)
	now := time.Unix(1700000000, 0)
	for _, addr := range []string{"10.0.0.2", "10.0.0.9"} {
		l.Dispatch(state.SessionStateChanged{Address: mustAddr(addr), State: "established", At: now})
	}
	waitFor(t, "both sessions established", func() bool {
		s := l.State()
		n := 0
		s.Out.Sessions.Range(func(_ string, x *state.Session) bool {
			if x.BGP == "established" {
				n++
			}
			return true
		})
		return n == 2
	})
	return l, sp
}

func TestMetricsExpositionLints(t *testing.T) {
	l := startInspectedLoop(t)
	problems, err := testutil.GatherAndLint(l.Metrics().Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	mfs, err := l.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", "peeragent_build_info",
		"peeragent_session_flaps_total", "peeragent_sessions", "peeragent_learned_routes",
		"peeragent_neighbor_session_state", "peeragent_neighbor_learned_routes", "peeragent_effects_total",
		"peeragent_own_paths", "peeragent_route_table_entries"} {
		if !names[want] {
			t.Errorf("no %s in the exposition", want)
		}
	}
}

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	code, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	return body
}

// learnedFrom is a best-path event: prefixes learned from the mesh peer
// 10.0.0.2 and the ToR 10.0.0.9, one of them over both (ECMP).
func learnedFrom(gen uint64, withdraw bool) state.BestPathsChanged {
	mesh, tor := mustAddr("10.0.0.2"), mustAddr("10.0.0.9")
	path := func(nb netip.Addr) state.LearnedPath {
		return state.LearnedPath{NextHops: []netip.Addr{nb}, Neighbor: nb, Withdrawn: withdraw}
	}
	ev := state.BestPathsChanged{Gen: gen}
	for _, x := range []struct {
		prefix string
		from   []netip.Addr
	}{
		{"192.168.50.0/24", []netip.Addr{tor}}, {"192.168.51.0/24", []netip.Addr{tor}},
		{"192.168.52.0/24", []netip.Addr{mesh, tor}}, {"192.168.53.0/24", []netip.Addr{mesh}},
	} {
		bp := state.BestPaths{Prefix: netip.MustParsePrefix(x.prefix)}
		for _, nb := range x.from {
			bp.Paths = append(bp.Paths, path(nb))
		}
		ev.Prefixes = append(ev.Prefixes, bp)
	}
	return ev
}

// TestMetricsNeighborBreakdownLeavesMeshAggregated: the route counts come
// from the learned best paths as the loop counts them, per neighbor (a
// prefix over both counts for each), and a scrape never asks the speaker
// (which walks every neighbor's Adj-RIB for it).
func TestMetricsNeighborBreakdownLeavesMeshAggregated(t *testing.T) {
	l, sp := startInspectedLoopWith(t)
	l.Dispatch(learnedFrom(l.State().Routing.SpeakerGen, false))
	waitFor(t, "4 learned prefixes", func() bool { return l.State().Inputs.Learned.Len() == 4 })
	before := sp.inspects.Load()
	body := scrape(t, MetricsHandler(l))
	if n := sp.inspects.Load() - before; n != 0 {
		t.Errorf("a scrape asked the speaker %d times, want 0", n)
	}
	for _, want := range []string{
		`peeragent_neighbor_session_state{neighbor="10.0.0.9",origin="bgppeer/tor",state="established"} 1`,
		`peeragent_neighbor_session_state{neighbor="10.0.0.9",origin="bgppeer/tor",state="idle"} 0`,
		`peeragent_neighbor_learned_routes{neighbor="10.0.0.9",origin="bgppeer/tor"} 3`,
		`peeragent_sessions{group="mesh",state="established"} 1`,
		`peeragent_sessions{group="peer",state="established"} 1`,
		`peeragent_learned_routes{group="mesh"} 2`,
		`peeragent_learned_routes{group="peer"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(body, `neighbor="10.0.0.2"`) {
		t.Error("a mesh peer has series of its own")
	}
	if strings.Contains(body, testPassword) {
		t.Error("password text in the scrape")
	}
	l.Dispatch(learnedFrom(l.State().Routing.SpeakerGen, true))
	waitFor(t, "no learned prefix", func() bool { return l.State().Inputs.Learned.Len() == 0 })
	body = scrape(t, MetricsHandler(l))
	for _, want := range []string{
		`peeragent_neighbor_learned_routes{neighbor="10.0.0.9",origin="bgppeer/tor"} 0`,
		`peeragent_learned_routes{group="mesh"} 0`,
		`peeragent_learned_routes{group="peer"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("after the withdrawals, scrape lacks %s", want)
		}
	}
}

func TestMetricsEffectKindsAreTheSameForEveryResult(t *testing.T) {
	l := startInspectedLoop(t)
	body := scrape(t, MetricsHandler(l))
	for _, want := range []string{
		`peeragent_effects_total{kind="add-peer",result="issued"} 2`,
		`peeragent_effects_total{kind="add-peer",result="applied"} 2`,
		`peeragent_effects_total{kind="start-server",result="issued"} 1`,
		`peeragent_effects_total{kind="watch-secret",result="applied"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(body, `kind="peer"`) || strings.Contains(body, `kind="route"`) {
		t.Error("a coarse kind label is left")
	}
}

func TestSessionFlapsIsACounterThatOutlivesItsNeighbor(t *testing.T) {
	l := startInspectedLoop(t)
	l.Dispatch(state.SessionStateChanged{Address: mustAddr("10.0.0.9"), State: "idle", Reason: "hold timer expired"})
	want := "peeragent_session_flaps_total 1"
	waitFor(t, want, func() bool { return strings.Contains(scrape(t, MetricsHandler(l)), want) })
	l.Dispatch(state.PeerDeleted{Name: "tor"})
	waitFor(t, "the neighbor gone", func() bool {
		_, ok := l.State().Out.Neighbors.Get(state.AddrKey(mustAddr("10.0.0.9")))
		return !ok
	})
	body := scrape(t, MetricsHandler(l))
	if !strings.Contains(body, want) {
		t.Errorf("after the neighbor went, the scrape lacks %q", want)
	}
	if strings.Contains(body, `neighbor="10.0.0.9"`) {
		t.Error("a deleted neighbor still has series")
	}
}

func TestMetricsHandlerServesOnlyMetrics(t *testing.T) {
	l := startInspectedLoop(t)
	srv := httptest.NewServer(MetricsHandler(l))
	defer srv.Close()
	for _, path := range []string{"/state", "/actions", "/neighbors/10.0.0.9", "/fsm"} {
		if code, _ := get(t, srv.URL+path); code != http.StatusNotFound {
			t.Errorf("metrics address serves %s: %d, want 404", path, code)
		}
	}
}

func TestNeighborDetailEndpoint(t *testing.T) {
	l := startInspectedLoop(t)
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()
	code, body := get(t, srv.URL+"/neighbors/10.0.0.9")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var d NeighborDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Session == nil || d.Session.BGP != "established" || d.Speaker == nil || d.Speaker.Advertised == nil ||
		*d.Speaker.Advertised != 3 || d.Speaker.HoldTime != 90 {
		t.Errorf("detail = %s", body)
	}
	if !strings.Contains(body, `"password": "hmac:`) || strings.Contains(body, testPassword) {
		t.Errorf("password not as a fingerprint: %s", body)
	}
	if code, _ := get(t, srv.URL+"/neighbors/10.9.9.9"); code != http.StatusNotFound {
		t.Errorf("unknown neighbor: %d, want 404", code)
	}
	if code, _ := get(t, srv.URL+"/neighbors/bogus"); code != http.StatusBadRequest {
		t.Errorf("bad address: %d, want 400", code)
	}
}

// TestMetricsNeighborSeriesCap: with the cap at 1 (run's
// --metrics-neighbor-series), three BGPPeer neighbors and a mesh peer give
// series for the first BGPPeer neighbor in address order, and the gauge
// counts the two left out (the mesh is never broken out, never counted).
func TestMetricsNeighborSeriesCap(t *testing.T) {
	for _, c := range []struct {
		name      string
		cap       int
		omitted   string
		broken    []string
		notBroken []string
	}{
		{"cap-1", 1, "peeragent_neighbor_series_omitted 2", []string{"10.0.0.7"}, []string{"10.0.0.8", "10.0.0.9"}},
		{"default-64", 0, "peeragent_neighbor_series_omitted 0", []string{"10.0.0.7", "10.0.0.8", "10.0.0.9"}, nil},
		{"none", -1, "peeragent_neighbor_series_omitted 3", nil, []string{"10.0.0.7", "10.0.0.8", "10.0.0.9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := state.New("node-a", state.Options{})
			for _, n := range []struct{ addr, origin string }{{"10.0.0.9", "bgppeer/c"}, {"10.0.0.7", "bgppeer/a"},
				{"10.0.0.8", "bgppeer/b"}, {"10.0.0.2", "mesh"}} {
				a := mustAddr(n.addr)
				s.Out.Neighbors = s.Out.Neighbors.Set(state.AddrKey(a), &state.Neighbor{Address: a, Origin: n.origin})
			}
			l := NewLoop(LoopConfig{Initial: s, Speaker: &fakeSpeaker{}, Secrets: &fakeSecrets{watched: map[string]bool{}},
				Log: discardLogger(), NeighborSeries: c.cap})
			body := scrape(t, MetricsHandler(l))
			if !strings.Contains(body, c.omitted+"\n") {
				t.Errorf("/metrics lacks %q", c.omitted)
			}
			for _, a := range c.broken {
				if !strings.Contains(body, `peeragent_neighbor_session_state{neighbor="`+a+`"`) {
					t.Errorf("no series for %s", a)
				}
			}
			for _, a := range append(c.notBroken, "10.0.0.2") {
				if strings.Contains(body, `neighbor="`+a+`"`) {
					t.Errorf("a series for %s, beyond the cap or a mesh peer", a)
				}
			}
		})
	}
}
