package vpp

import (
	"sync"
	"testing"

	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"
)

// fakeVPP is govpp's mock adapter behind a real core.Connection, so the
// tests see the bytes govpp really encodes. It decodes every
// ip_route_add_del it receives and answers with the scripted retvals, in
// order (0 once the script runs out).
type fakeVPP struct {
	t       *testing.T
	adapter *mock.VppAdapter
	conn    *core.Connection

	mu      sync.Mutex
	sent    []*ip.IPRouteAddDel
	retvals []int32
}

func newFakeVPP(t *testing.T, retvals ...int32) *fakeVPP {
	t.Helper()
	f := &fakeVPP{t: t, adapter: mock.NewVppAdapter(), retvals: retvals}
	f.adapter.MockReplyHandler(f.reply)
	conn, err := core.Connect(f.adapter)
	if err != nil {
		t.Fatalf("connect to mock VPP: %v", err)
	}
	f.conn = conn
	t.Cleanup(conn.Disconnect)
	return f
}

func (f *fakeVPP) reply(req mock.MessageDTO) ([]byte, uint16, bool) {
	if req.MsgName != "ip_route_add_del" {
		f.t.Errorf("unexpected message %q sent to VPP", req.MsgName)
		return nil, 0, false
	}
	msg := &ip.IPRouteAddDel{}
	if err := codec.DefaultCodec.DecodeMsg(req.Data, msg); err != nil {
		f.t.Errorf("decode ip_route_add_del: %v", err)
		return nil, 0, false
	}
	reply := &ip.IPRouteAddDelReply{Retval: f.record(msg)}
	data, err := f.adapter.ReplyBytes(req, reply)
	if err != nil {
		f.t.Errorf("encode reply: %v", err)
		return nil, 0, false
	}
	id, _ := f.adapter.GetMsgID(reply.GetMessageName(), reply.GetCrcString())
	return data, id, true
}

// record keeps msg and pops the retval to answer it with.
func (f *fakeVPP) record(msg *ip.IPRouteAddDel) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, msg)
	if len(f.retvals) == 0 {
		return 0
	}
	rv := f.retvals[0]
	f.retvals = f.retvals[1:]
	return rv
}

func (f *fakeVPP) messages() []*ip.IPRouteAddDel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*ip.IPRouteAddDel(nil), f.sent...)
}
