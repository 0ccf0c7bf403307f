package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeServesPastIdleConnections attacks a listener as a local
// process would: with a cap of 4, 200 connections that never send a
// request and 3 kept alive after one request are held open, then a new
// client asks for /healthz: it is answered within 2 s (the idle ones are
// closed oldest first to make room; before, it waited in the backlog
// until the idle ones timed out), and the listener never held more than
// the cap.
func TestServeServesPastIdleConnections(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const maxConns = 4
	srv, ev := serveForTest(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }), maxConns)
	defer srv.Close()
	addr := ln.Addr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range 3 { // kept alive, idle between requests
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("keep-alive request: %v", err)
		}
		resp.Body.Close()
	}
	for range 200 { // never a request
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind 203 idle connections: %v", err)
	}
	resp.Body.Close()
	t.Logf("/healthz answered in %v behind 203 idle connections", time.Since(t0).Round(time.Millisecond))
	ev.mu.Lock()
	open, evicted := len(ev.conns), ev.evicted
	ev.mu.Unlock()
	if open > maxConns {
		t.Errorf("%d connections open, cap %d", open, maxConns)
	}
	if evicted < 200 {
		t.Errorf("%d idle connections closed, want at least 200", evicted)
	}
}

// TestServeNeverEvictsARequest: connections serving a request are not
// closed for new ones; those wait until one finishes. (Each slow request
// is serving before the next connects: a connection not yet sending is as
// idle as any, and may be closed for a newcomer.)
func TestServeNeverEvictsARequest(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv, ev := serveForTest(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok\n")
	}), 2)
	defer srv.Close()
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	busy := func() int {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		n := 0
		for _, x := range ev.conns {
			if !x.idle {
				n++
			}
		}
		return n
	}
	slow := make(chan error, 2)
	for i := range 2 {
		go func() {
			resp, err := client.Get("http://" + ln.Addr().String() + "/slow")
			if err == nil {
				resp.Body.Close()
			}
			slow <- err
		}()
		waitFor(t, fmt.Sprintf("slow request %d to run", i+1), func() bool { return busy() >= i+1 })
	}
	fast := make(chan error, 1)
	go func() {
		resp, err := client.Get("http://" + ln.Addr().String() + "/fast")
		if err == nil {
			resp.Body.Close()
		}
		fast <- err
	}()
	select {
	case err := <-fast:
		t.Fatalf("a third request was served while two ran under a cap of 2 (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for range 2 {
		if err := <-slow; err != nil {
			t.Errorf("slow request: %v", err)
		}
	}
	if err := <-fast; err != nil {
		t.Errorf("the waiting request: %v", err)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.evicted != 0 {
		t.Errorf("%d connections closed for new ones, want 0", ev.evicted)
	}
}

// serveForTest is Serve with its evictor, for the tests that count evictions.
func serveForTest(ln net.Listener, h http.Handler, maxConns int) (*http.Server, *evictor) {
	srv, lln, ev := server(ln, h, maxConns)
	go srv.Serve(lln)
	return srv, ev
}
