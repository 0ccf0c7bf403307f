package netns

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// frame is an Ethernet frame holding an IPv6 TCP segment.
func frame(src, dst netip.Addr, sport, dport uint16, seq uint32, syn bool, payload string) []byte {
	b := make([]byte, 14+40+20, 14+40+20+len(payload))
	binary.BigEndian.PutUint16(b[12:], unix.ETH_P_IPV6)
	ip := b[14:]
	ip[0] = 6 << 4
	binary.BigEndian.PutUint16(ip[4:], uint16(20+len(payload)))
	ip[6] = unix.IPPROTO_TCP
	copy(ip[8:], src.AsSlice())
	copy(ip[24:], dst.AsSlice())
	tcp := ip[40:]
	binary.BigEndian.PutUint16(tcp[0:], sport)
	binary.BigEndian.PutUint16(tcp[2:], dport)
	binary.BigEndian.PutUint32(tcp[4:], seq)
	tcp[12] = 5 << 4
	if syn {
		tcp[13] = 0x02
	}
	return append(b, payload...)
}

func TestCaptureReassembles(t *testing.T) {
	a, b := netip.MustParseAddr("fd00:37::1"), netip.MustParseAddr("fd00:37::2")
	c := &Capture{from: a}
	var isn uint32 = 0xfffffff0 // the offsets wrap around 2^32
	for _, f := range [][]byte{
		frame(a, b, 40000, 179, 7, false, "missed SYN"),       // before any SYN: left out
		frame(a, b, 40001, 179, isn, true, ""),                // SYN
		frame(a, b, 40001, 179, isn+1+6, false, "world"),      // out of order
		frame(a, b, 40001, 179, isn+1, false, "hello "),       // the start
		frame(a, b, 40001, 179, isn+1+3, false, "lo w"),       // a retransmission overlapping both
		frame(a, b, 40001, 179, isn+1+20, false, "after gap"), // beyond a gap: not placed
		frame(b, a, 179, 40001, 99, true, ""),                 // the other direction: left out
		frame(b, a, 179, 40001, 100, false, "reply"),
		frame(a, b, 40002, 179, 5, true, ""), // a second connection
		frame(a, b, 40002, 179, 6, false, "second"),
	} {
		c.add(f)
	}
	got, err := c.Streams()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("hello world"), []byte("second")}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Streams = %q, want %q", got, want)
	}
	// A new SYN on the same ports starts the connection afresh.
	c.add(frame(a, b, 40002, 179, 1000, true, ""))
	c.add(frame(a, b, 40002, 179, 1001, false, "third"))
	if got, _ := c.Streams(); len(got) != 3 || string(got[2]) != "third" {
		t.Errorf("after a new SYN: %q", got)
	}
}

// TestCaptureOnTheWire: what one end of a Pair sends over TCP, in two
// writes, is captured on the other end's device, and nothing the other
// end sends.
func TestCaptureOnTheWire(t *testing.T) {
	a, b := Pair(t, netip.MustParsePrefix("fd00:38::1/64"), netip.MustParsePrefix("fd00:38::2/64"))
	capture := CaptureTCP(t, b.NS, b.Dev, a.Addr.Addr())
	l, err := Listen(b.NS, "tcp", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("from b"))
		buf := make([]byte, 64)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	var conn net.Conn
	to := netip.AddrPortFrom(b.Addr.Addr(), uint16(l.Addr().(*net.TCPAddr).Port))
	if err := Do(a.NS, func() (err error) {
		conn, err = net.DialTimeout("tcp", to.String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, s := range []string{"hello ", "world"} {
		if _, err := conn.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := capture.WaitStreams(5*time.Second, func(s [][]byte) bool { return len(s) == 1 && string(s[0]) == "hello world" })
	if err != nil {
		t.Fatalf("%v: %q", err, got)
	}
}
