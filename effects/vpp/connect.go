package vpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.fd.io/govpp/adapter"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/core"
)

// connectTimeout caps one connection attempt when the caller's context
// has no earlier deadline: a VPP that accepts the socket but never
// answers would otherwise hold the agent's start-up.
const connectTimeout = 5 * time.Second

// Connect dials the VPP API socket at socketPath once, within ctx and at
// most connectTimeout, and checks that VPP knows the route table's
// messages as compiled in. The returned Executor owns the connection: Close it.
func Connect(ctx context.Context, socketPath string, logger *slog.Logger) (*Executor, error) {
	if socketPath == "" {
		return nil, fmt.Errorf("connect to VPP: %w", errNoSocket)
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	client := socketclient.NewVppClient(socketPath)
	// socketclient's handshake has its own read timeout (3 s by default);
	// align it with ours so the dial goroutine ends when we give up.
	deadline, _ := ctx.Deadline()
	client.SetConnectTimeout(time.Until(deadline))
	return connectWith(ctx, client, socketPath, logger)
}

// errNoSocket is returned by Connect for an empty socket path, so the
// caller's wiring chooses Disabled explicitly instead of a default path.
var errNoSocket = errors.New("no VPP API socket path given")

type dialed struct {
	conn *core.Connection
	err  error
}

// connectWith connects through any adapter (the mock in tests). core.Connect
// takes no context, so it runs aside; when ctx ends first, a connection
// that still arrives later is closed rather than leaked.
func connectWith(ctx context.Context, a adapter.VppAPI, target string, logger *slog.Logger) (*Executor, error) {
	done := make(chan dialed, 1)
	go func() {
		conn, err := core.Connect(a)
		done <- dialed{conn, err}
	}()
	select {
	case d := <-done:
		if d.err != nil {
			return nil, fmt.Errorf("connect to VPP at %s: %w", target, d.err)
		}
		return ready(ctx, d.conn, target, logger)
	case <-ctx.Done():
		go func() {
			if d := <-done; d.conn != nil {
				d.conn.Disconnect()
			}
		}()
		return nil, fmt.Errorf("connect to VPP at %s: no answer: %w", target, ctx.Err())
	}
}

// ready checks the connection speaks the route table's messages (the FIB
// source ones and ip_route_add_del_v2, same CRCs), registers our FIB
// source (docs/routes.md §9.7), and wraps it in an Executor that owns it.
func ready(ctx context.Context, conn *core.Connection, target string, logger *slog.Logger) (*Executor, error) {
	ch, err := conn.NewAPIChannel()
	if err != nil {
		conn.Disconnect()
		return nil, fmt.Errorf("connect to VPP at %s: %w", target, err)
	}
	err = ch.CheckCompatiblity(routeMessages...)
	ch.Close()
	if err != nil {
		conn.Disconnect()
		return nil, fmt.Errorf("VPP at %s does not support the FIB source and ip_route_add_del_v2 messages: %w", target, err)
	}
	e, err := Attach(ctx, conn, logger)
	if err != nil {
		conn.Disconnect()
		return nil, fmt.Errorf("VPP at %s: %w", target, err)
	}
	e.close = conn.Disconnect
	e.log.Info("connected to VPP", "socket", target, "fibSource", e.source.Load())
	return e, nil
}
