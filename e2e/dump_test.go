package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

// stateDump is the part of an agent's /state the tests read. Passwords
// stay the fingerprint strings the agent served (decoding them as
// state.Password would fingerprint the fingerprint).
type stateDump struct {
	Node      string `json:"node"`
	Neighbors []struct {
		Address  string `json:"address"`
		Password string `json:"password"`
		Passive  bool   `json:"passive"`
	} `json:"neighbors"`
	Sessions []*state.Session    `json:"sessions"`
	Problems []state.Problem     `json:"problems"`
	Routing  state.Routing       `json:"routing"`
	Routes   []*state.TableRoute `json:"routes"`
}

// fetchState reads a running agent's /state at addr through client (nil:
// http.DefaultClient), within 10 s.
func fetchState(ctx context.Context, client *http.Client, addr string) (stateDump, error) {
	var d stateDump
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return d, agent.Fetch(ctx, client, addr, "/state", &d)
}

// session is the session with addr in d (nil: none).
func (d stateDump) session(addr string) *state.Session {
	for _, s := range d.Sessions {
		if s.Address.String() == addr {
			return s
		}
	}
	return nil
}

// bgp is the speaker's state of the session with addr in d ("": none).
func (d stateDump) bgp(addr string) string {
	if s := d.session(addr); s != nil {
		return s.BGP
	}
	return ""
}

// route is d's table route of prefix (nil: none).
func (d stateDump) route(prefix string) *state.TableRoute {
	for _, r := range d.Routes {
		if r.Prefix.String() == prefix {
			return r
		}
	}
	return nil
}

// installed reports whether the dataplane holds r: applied, or adopted.
func installed(r *state.TableRoute) bool {
	return r != nil && (r.Phase == state.RoutePhaseApplied || r.Phase == state.RoutePhaseAdopted)
}

// waitState reads /state through fetch every 100 ms until cond holds and
// returns that dump; when limit passes or ctx ends first it fails t with
// what, the last error and the last dump.
func waitState(t testing.TB, ctx context.Context, limit time.Duration, fetch func(context.Context) (stateDump, error),
	what string, cond func(stateDump) bool) stateDump {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var d stateDump
	var err error
	if poll(ctx, 100*time.Millisecond, func() bool {
		d, err = fetch(ctx)
		return err == nil && cond(d)
	}) {
		return d
	}
	js, _ := json.Marshal(d)
	t.Fatalf("%s: not within %v (last error %v); last /state: %s", what, limit, err, js)
	return d
}
