package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Capture records, on one device of a namespace, the TCP payload that one
// IPv6 address sends: per connection, reassembled in sequence order from
// its SYN on. It reads a packet socket (AF_PACKET) opened in the
// namespace, so it sees what crosses the wire, before any BGP speaker
// parses it. Its methods are safe for concurrent use.
type Capture struct {
	from netip.Addr
	fd   int
	quit chan struct{}
	done chan struct{}

	mu    sync.Mutex
	conns []*tcpStream // in the order of their SYNs
	err   error        // why reading stopped early
}

// tcpStream is one connection's direction from the captured address.
type tcpStream struct {
	srcPort, dstPort uint16
	isn              uint32            // sequence number of the SYN
	segs             map[uint32][]byte // payload by offset from isn+1
}

// maxFrame is larger than any frame a veth hands a packet socket,
// offloads (GRO) included.
const maxFrame = 1 << 17

// CaptureTCP starts capturing, on dev in ns, the TCP segments whose IPv6
// source is from. Start it before the connections it must see: a
// connection whose SYN it missed is left out. A cleanup stops it.
func CaptureTCP(t testing.TB, ns, dev string, from netip.Addr) *Capture {
	t.Helper()
	h, err := Handle(ns)
	if err != nil {
		t.Fatalf("netns: capture in %s: %v", ns, err)
	}
	link, err := h.LinkByName(dev)
	h.Close()
	if err != nil {
		t.Fatalf("netns: capture in %s: %v", ns, err)
	}
	proto := htons(unix.ETH_P_IPV6)
	c := &Capture{from: from, fd: -1, quit: make(chan struct{}), done: make(chan struct{})}
	err = Do(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
		if err != nil {
			return err
		}
		c.fd = fd
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: link.Attrs().Index})
	})
	if err == nil {
		// A read returns at least every 100 ms, so that Stop is prompt.
		err = unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100_000})
	}
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		t.Fatalf("netns: packet socket on %s in %s: %v", dev, ns, err)
	}
	go c.read()
	t.Cleanup(c.Stop)
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Stop ends the capture; what it recorded stays readable. Idempotent.
func (c *Capture) Stop() {
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.done
}

func (c *Capture) read() {
	defer close(c.done)
	defer unix.Close(c.fd)
	buf := make([]byte, maxFrame)
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		c.add(buf[:n])
	}
}

// add takes one Ethernet frame: IPv6, no extension headers, TCP.
func (c *Capture) add(frame []byte) {
	const eth, ip6 = 14, 40
	if len(frame) < eth+ip6+20 || binary.BigEndian.Uint16(frame[12:]) != unix.ETH_P_IPV6 {
		return
	}
	ip := frame[eth:]
	src, _ := netip.AddrFromSlice(ip[8:24])
	if ip[6] != unix.IPPROTO_TCP || src != c.from {
		return
	}
	tcp := ip[ip6:]
	if plen := int(binary.BigEndian.Uint16(ip[4:])); plen < len(tcp) {
		tcp = tcp[:plen] // Ethernet padding
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || off > len(tcp) {
		return
	}
	srcPort, dstPort := binary.BigEndian.Uint16(tcp[0:]), binary.BigEndian.Uint16(tcp[2:])
	seq, syn := binary.BigEndian.Uint32(tcp[4:]), tcp[13]&0x02 != 0
	c.mu.Lock()
	defer c.mu.Unlock()
	var s *tcpStream
	for _, x := range c.conns {
		if x.srcPort == srcPort && x.dstPort == dstPort {
			s = x
		}
	}
	switch {
	case syn && (s == nil || s.isn != seq):
		// A new connection, or the ports used again: start afresh.
		s = &tcpStream{srcPort: srcPort, dstPort: dstPort, isn: seq, segs: map[uint32][]byte{}}
		c.conns = append(c.conns, s)
	case s == nil:
		return // its SYN was missed
	}
	if payload := tcp[off:]; len(payload) > 0 {
		o := seq - s.isn - 1
		if len(payload) > len(s.segs[o]) {
			s.segs[o] = slices.Clone(payload)
		}
	}
}

// Streams are the bytes each captured connection carried from the
// captured address, contiguous from its start (a gap ends it), in the
// order of their SYNs; and why the capture stopped early, if it did.
func (c *Capture) Streams() ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]byte, 0, len(c.conns))
	for _, s := range c.conns {
		out = append(out, s.bytes())
	}
	if c.err != nil {
		return out, fmt.Errorf("netns: capture stopped: %w", c.err)
	}
	return out, nil
}

func (s *tcpStream) bytes() []byte {
	var b []byte
	for _, o := range slices.Sorted(maps.Keys(s.segs)) {
		seg := s.segs[o]
		if int(o) > len(b) {
			break // a gap: what follows cannot be placed
		}
		if end := int(o) + len(seg); end > len(b) {
			b = append(b, seg[len(b)-int(o):]...)
		}
	}
	return b
}

// capturePoll is how often WaitStreams looks.
const capturePoll = 50 * time.Millisecond

// WaitStreams polls Streams until ok holds for them or timeout passes,
// and returns the last ones seen.
func (c *Capture) WaitStreams(timeout time.Duration, ok func([][]byte) bool) ([][]byte, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := c.Streams()
		if ok(s) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("netns: captured streams not as wanted within %v", timeout)
		}
		time.Sleep(capturePoll)
	}
}
