package agent

import (
	"encoding/json"
	"net/http"

	"github.com/peeragent/peeragent/reducer"
)

// Endpoints lists what the HTTP server serves (also printed by --help).
const Endpoints = `  GET /state    the live State as JSON (passwords as sha256 fingerprints)
  GET /actions  the journal of the last actions, with sequence numbers and times
  GET /healthz  200 while the loop and the effects run and the speaker is up (or only another BGP
                speaker holds its port); 503 with why
  GET /readyz   200 once every source has synced and the first effects ran, while the speaker is up
                and the dataplane can install routes (VPP connected, the kernel not refusing)
  GET /metrics  Prometheus metrics (also on --metrics-addr, alone)
  GET /neighbors/ADDRESS  one neighbor: State's view and the speaker's
  GET /routes   the route table: prefix, next hops, learned from which neighbors, phase, why not installed
  GET /fsm      the session lifecycle as a mermaid state diagram`

// Handler serves the loop's State and health over HTTP. Nothing it serves
// holds a password: the State dump and the journal print fingerprints.
func Handler(l *Loop) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		s := l.State()
		writeJSON(w, s.Dump())
	})
	mux.HandleFunc("GET /actions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, l.Journal().Entries())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := l.Health(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s := l.State()
		if err := speakerDown(s); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := dataplaneDown(s); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !l.Ready() {
			http.Error(w, "not ready: waiting for every source to sync and the first effects to run", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", metricsHandler(l))
	mux.HandleFunc("GET /neighbors/{address}", neighborDetail(l))
	mux.HandleFunc("GET /routes", func(w http.ResponseWriter, r *http.Request) {
		s := l.State()
		writeJSON(w, s.RouteTable())
	})
	mux.HandleFunc("GET /fsm", func(w http.ResponseWriter, r *http.Request) {
		m, err := reducer.Mermaid()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(m))
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
