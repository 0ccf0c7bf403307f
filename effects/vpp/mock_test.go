package vpp

import (
	"sync"
	"testing"

	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"
)

// fakeVPP is govpp's mock adapter behind a real core.Connection, so the
// tests see the bytes govpp really encodes. It decodes every
// ip_route_add_del_v2 it receives and answers with the scripted
// retvals, in order (0 once the script runs out); fib_source_add gets
// the id sourceID; dumps are recorded and answered from queueDump.
type fakeVPP struct {
	t       *testing.T
	adapter *mock.VppAdapter
	conn    *core.Connection

	mu       sync.Mutex
	sent     []*ip.IPRouteAddDelV2
	requests []api.Message // every request but control_ping, in order
	retvals  []int32
	sourceID uint8
}

func newFakeVPP(t *testing.T, retvals ...int32) *fakeVPP {
	t.Helper()
	f := &fakeVPP{t: t, retvals: retvals, sourceID: 25}
	f.adapter, f.conn = mockConn(t, f.reply)
	return f
}

// mockConn is govpp's mock adapter answering each request with the reply
// handle gives (see answer), behind a real core.Connection that the
// test's end disconnects.
func mockConn(t *testing.T, handle func(api.Message) api.Message) (*mock.VppAdapter, *core.Connection) {
	t.Helper()
	a := mock.NewVppAdapter()
	a.MockReplyHandler(func(req mock.MessageDTO) ([]byte, uint16, bool) { return answer(t, a, req, handle) })
	conn, err := core.Connect(a)
	if err != nil {
		t.Fatalf("connect to mock VPP: %v", err)
	}
	t.Cleanup(conn.Disconnect)
	return a, conn
}

// decodeRequest is the route table's request req (ok false for a
// control_ping, which the queue answers, or on a failure it reports).
func decodeRequest(t *testing.T, a *mock.VppAdapter, req mock.MessageDTO) (msg api.Message, ok bool) {
	if ping, _ := a.GetMsgID("control_ping", ""); req.MsgID == ping {
		return nil, false // answered from the queue (the mock names it "")
	}
	switch req.MsgName {
	case "ip_route_add_del_v2":
		msg = &ip.IPRouteAddDelV2{}
	case "fib_source_add":
		msg = &fib.FibSourceAdd{}
	case "fib_source_dump":
		msg = &fib.FibSourceDump{}
	case "ip_route_v2_dump":
		msg = &ip.IPRouteV2Dump{}
	default:
		t.Errorf("unexpected message %q sent to VPP", req.MsgName)
		return nil, false
	}
	if err := codec.DefaultCodec.DecodeMsg(req.Data, msg); err != nil {
		t.Errorf("decode %s: %v", req.MsgName, err)
		return nil, false
	}
	return msg, true
}

// answer is the mock's answer to req: the reply handle gives to the
// request decoded, or none (handle returns nil) for a dump, whose details
// and control_ping reply come from the mock's queue.
func answer(t *testing.T, a *mock.VppAdapter, req mock.MessageDTO, handle func(api.Message) api.Message) ([]byte, uint16, bool) {
	msg, ok := decodeRequest(t, a, req)
	if !ok {
		return nil, 0, false
	}
	reply := handle(msg)
	if reply == nil {
		return nil, 0, false
	}
	return encodeReply(t, a, req, reply)
}

// encodeReply is reply as the mock's answer to req.
func encodeReply(t *testing.T, a *mock.VppAdapter, req mock.MessageDTO, reply api.Message) ([]byte, uint16, bool) {
	data, err := a.ReplyBytes(req, reply)
	if err != nil {
		t.Errorf("encode reply: %v", err)
		return nil, 0, false
	}
	id, _ := a.GetMsgID(reply.GetMessageName(), reply.GetCrcString())
	return data, id, true
}

func (f *fakeVPP) reply(msg api.Message) api.Message {
	switch msg := msg.(type) {
	case *ip.IPRouteAddDelV2:
		return &ip.IPRouteAddDelV2Reply{Retval: f.record(msg)}
	case *fib.FibSourceAdd:
		f.record(msg)
		return &fib.FibSourceAddReply{ID: f.sourceID}
	}
	f.record(msg) // a dump: its details come from the queue
	return nil
}

// record keeps msg and pops the retval to answer it with.
func (f *fakeVPP) record(msg api.Message) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, msg)
	if m, ok := msg.(*ip.IPRouteAddDelV2); ok {
		f.sent = append(f.sent, m)
	}
	if len(f.retvals) == 0 {
		return 0
	}
	rv := f.retvals[0]
	f.retvals = f.retvals[1:]
	return rv
}

// messages are the ip_route_add_del_v2 requests, in order.
func (f *fakeVPP) messages() []*ip.IPRouteAddDelV2 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*ip.IPRouteAddDelV2(nil), f.sent...)
}

// requestsSent is every request but control_ping, in order.
func (f *fakeVPP) requestsSent() []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Message(nil), f.requests...)
}

// queueDump answers the next dump with details and its control_ping
// with the reply. The handlers stay first: they record the dump request
// and pass it on to the queue.
func (f *fakeVPP) queueDump(details ...api.Message) {
	f.adapter.MockReply(details...)
	f.adapter.MockReply(&memclnt.ControlPingReply{})
	f.adapter.MockReplyHandler(func(mock.MessageDTO) ([]byte, uint16, bool) { return nil, 0, false })
}
