package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestFetch reads what Handler serves back: /state into a part of it, and
// an unknown neighbor as a *StatusError 404; nothing listening is an error
// naming the path.
func TestFetch(t *testing.T) {
	l, _, _ := startLoop(t)
	for _, a := range labActions() {
		l.Dispatch(a)
	}
	waitFor(t, "ready", l.Ready)
	srv := httptest.NewServer(Handler(l))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var d struct {
		Node     string           `json:"node"`
		Sessions []*state.Session `json:"sessions"`
	}
	if err := Fetch(context.Background(), nil, addr, "/state", &d); err != nil || d.Node != "node-a" || len(d.Sessions) != 2 {
		t.Errorf("/state: %+v, %v; want node-a with 2 sessions", d, err)
	}
	var nd any
	err := Fetch(context.Background(), srv.Client(), addr, "/neighbors/192.0.2.77", &nd)
	if se := (*StatusError)(nil); !errors.As(err, &se) || se.Code != http.StatusNotFound || se.Path != "/neighbors/192.0.2.77" {
		t.Errorf("unknown neighbor: %v, want a StatusError 404", err)
	}
	srv.Close()
	if err := Fetch(context.Background(), nil, addr, "/routes", &nd); err == nil || !strings.Contains(err.Error(), "read /routes from "+addr) {
		t.Errorf("nothing listening: %v", err)
	}
}
