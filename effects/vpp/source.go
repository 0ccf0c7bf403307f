package vpp

import (
	"context"
	"errors"
	"fmt"
	"io"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/ip"
)

// SourceName is the FIB source the route table's entries are added in
// (docs/routes.md §9.7, decision C5): it is how this agent knows its own
// routes, across its restarts, from everything else in VPP's FIB.
const SourceName = "peeragent"

// SourcePriority ranks the source among VPP's (lower is stronger): just
// weaker than API (0x80) and CLI (0x81), so that a route the CNI adds
// through the API wins on the same prefix, and stronger than the
// dynamic sources from LISP (0x90) on (VPP src/vnet/fib/fib_source.h,
// foreach_fib_source).
const SourcePriority = 0x82

// errNoSource: the connected VPP has no source of ours (an Executor built
// with New, or one whose registration failed).
var errNoSource = errors.New("no FIB source " + SourceName + " registered in VPP")

// routeMessages are the messages the route table needs: a VPP without
// them is refused at connection.
var routeMessages = []api.Message{
	&fib.FibSourceAdd{}, &fib.FibSourceAddReply{}, &fib.FibSourceDump{}, &fib.FibSourceDetails{},
	&ip.IPRouteAddDelV2{}, &ip.IPRouteAddDelV2Reply{}, &ip.IPRouteV2Dump{}, &ip.IPRouteV2Details{},
}

// registerSource finds the source SourceName (left by an earlier run:
// VPP never forgets a source, and a second one of the same name would
// hide that run's routes) or adds it, and returns its id.
func registerSource(ctx context.Context, conn api.Connection) (uint8, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	dump, err := fib.NewServiceClient(conn).FibSourceDump(ctx, &fib.FibSourceDump{})
	if err != nil {
		return 0, fmt.Errorf("fib_source_dump: %w", err)
	}
	var found *fib.FibSource
	for {
		d, err := dump.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("fib_source_dump: %w", err)
		}
		if d.Src.Name == SourceName && found == nil {
			found = &d.Src
		}
	}
	if found != nil {
		return found.ID, nil
	}
	reply := &fib.FibSourceAddReply{}
	req := &fib.FibSourceAdd{Src: fib.FibSource{Priority: SourcePriority, Name: SourceName}}
	if err := conn.Invoke(ctx, req, reply); err != nil {
		return 0, fmt.Errorf("fib_source_add: %w", err)
	}
	if reply.Retval != 0 {
		return 0, fmt.Errorf("fib_source_add: %w", retvalError(reply.Retval))
	}
	return reply.ID, nil
}
