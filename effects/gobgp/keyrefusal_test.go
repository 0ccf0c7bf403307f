package gobgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/state"
)

// TestKeyRefusalSeenThroughHandler: GoBGP's refusal line, as v4.8.0's
// addNeighbor logs it, is noted for the neighbor even when the GoBGP
// level hides warnings, with the kernel's error scrubbed; other lines and
// lines without a neighbor address are not refusals.
func TestKeyRefusalSeenThroughHandler(t *testing.T) {
	buf := &logBuf{}
	r := newRedactor()
	a := netip.MustParseAddr("10.0.0.2")
	r.remember(a, "hunter2")
	level := new(slog.LevelVar)
	level.Set(slog.LevelError)
	h := newScrubHandler(slog.NewTextHandler(buf, nil), level, r)
	h.refused = newKeyRefusals()
	l := slog.New(h).With(slog.String("Topic", "Server"))

	l.Warn("failed to set md5", slog.String("Topic", "Peer"), slog.String("Key", "10.0.0.2"), slog.String("Err", "cannot allocate memory hunter2"))
	l.Warn("failed to set md5", slog.String("Topic", "Peer"), slog.String("Key", "not-an-address"), slog.String("Err", "x"))
	l.Warn("failed to unset md5", slog.String("Key", "10.0.0.3"), slog.String("Err", "x"))

	why, ok := h.refused.take(a)
	if !ok || why != "cannot allocate memory [redacted]" {
		t.Errorf("refusal for %s: %q, %v; want the scrubbed kernel error", a, why, ok)
	}
	if _, ok := h.refused.take(netip.MustParseAddr("10.0.0.3")); ok {
		t.Errorf("an unset failure was taken for a refused key")
	}
	if len(h.refused.m) != 0 {
		t.Errorf("left over: %v", h.refused.m)
	}
	if buf.String() != "" {
		t.Errorf("warnings passed an Error threshold:\n%s", buf.String())
	}
}

// keyedNeighbor is a passive neighbor of sp at 127.0.0.41 with password.
func keyedNeighbor(sp *speaker, password string) *state.Neighbor {
	n := &state.Neighbor{
		Address: netip.MustParseAddr("127.0.0.41"), Port: 179, PeerASN: 65041, LocalASN: 64512,
		Origin: "bgppeer/keyed", SourceAddress: netip.MustParseAddr(sp.addr), GracefulRestartSeconds: 120,
		Families: []string{"ipv4-unicast"}, EBGPMultihopTTL: 255, Passive: true,
		Password: state.NewPassword(password),
	}
	return n
}

// refusedKey adds n and returns the executor's result, which must be a
// refusal, and checks that the neighbor is not left in the speaker.
func refusedKey(t *testing.T, sp *speaker, n *state.Neighbor, password string) state.PeerKeyRefused {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := sp.Execute(ctx, []effects.Effect{effects.AddPeer{Neighbor: n, Gen: 7}})
	if len(res) != 1 {
		t.Fatalf("results: %v", res)
	}
	got, ok := res[0].(state.PeerKeyRefused)
	if !ok {
		t.Fatalf("result %#v, want PeerKeyRefused", res[0])
	}
	if got.Address != n.Address || got.Gen != 7 || got.At.IsZero() {
		t.Errorf("refusal %+v, want address %s gen 7", got, n.Address)
	}
	if !strings.HasPrefix(got.Error, fmt.Sprintf("add peer %s (AS %d): the speaker refused its TCP-MD5 key: ", n.Address, n.PeerASN)) {
		t.Errorf("error %q does not name the neighbor", got.Error)
	}
	if strings.Contains(got.Error, password) || strings.Contains(sp.logs.String(), password) {
		t.Errorf("the key reached the error or the logs: %q", got.Error)
	}
	if _, there, err := currentPeer(ctx, sp.Speaker(), n.Address); err != nil || there {
		t.Errorf("refused neighbor still in the speaker (%v)", err)
	}
	return got
}

// TestKeyRefusedByKernel: the kernel refuses an 81-byte key (EINVAL,
// TCP_MD5SIG_MAXKEYLEN is 80), which GoBGP only logs; the executor takes
// the neighbor out and reports PeerKeyRefused. The reducer never sends
// such a key (docs/semantics.md §4); this is the executor's own guard.
func TestKeyRefusedByKernel(t *testing.T) {
	requireLoopback(t, "127.0.0.1")
	sp := newSpeaker(t, "127.0.0.1")
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	key := strings.Repeat("k", 81)
	got := refusedKey(t, sp, keyedNeighbor(sp, key), key)
	if !strings.Contains(got.Error, "invalid argument") {
		t.Errorf("error %q, want the kernel's EINVAL", got.Error)
	}
	t.Logf("81-byte key: %s", got.Error)

	// An 80-byte key is taken: the same neighbor applies.
	mustApply(t, sp.Executor, effects.AddPeer{Neighbor: keyedNeighbor(sp, strings.Repeat("k", 80)), Gen: 8})
}

// optmemHelperEnv runs TestKeyRefusedOptmemHelper for real: inside a
// network namespace whose net.core.optmem_max is too small for one key.
const optmemHelperEnv = "PEERAGENT_OPTMEM_HELPER"

// TestKeyRefusedWhenOptionMemoryFull: in a network namespace of its own
// (net.core.optmem_max is per namespace on Linux 6.8 and later) with the
// option memory set below one key's size, the kernel refuses an ordinary
// key with ENOMEM; the speaker runs there in a helper process (a socket
// belongs to the namespace of the thread that makes it, and GoBGP makes
// its listeners on goroutines of its own).
func TestKeyRefusedWhenOptionMemoryFull(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for ip netns")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	ns := fmt.Sprintf("peeragent-optmem-%d", os.Getpid())
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("netns", "add", ns); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := run("netns", "del", ns); err != nil {
			t.Error(err)
		}
	})
	if err := run("-n", ns, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	sysctl := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "echo 64 > /proc/sys/net/core/optmem_max && cat /proc/sys/net/core/optmem_max")
	if out, err := sysctl.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "64" {
		t.Skipf("net.core.optmem_max is not per namespace here (%v: %s)", err, out)
	}
	runHelperTest(t, []string{"ip", "netns", "exec", ns}, "TestKeyRefusedOptmemHelper", optmemHelperEnv, "optmem:")
}

// TestKeyRefusedOptmemHelper is TestKeyRefusedWhenOptionMemoryFull's
// speaker, run only by it.
func TestKeyRefusedOptmemHelper(t *testing.T) {
	if os.Getenv(optmemHelperEnv) != "1" {
		t.Skip("run by TestKeyRefusedWhenOptionMemoryFull")
	}
	sp := newSpeaker(t, "127.0.0.1")
	mustApply(t, sp.Executor, effects.StartServer{Server: sp.server(64512)})
	const key = "an-ordinary-key"
	got := refusedKey(t, sp, keyedNeighbor(sp, key), key)
	if !strings.Contains(got.Error, "cannot allocate memory") {
		t.Errorf("error %q, want the kernel's ENOMEM", got.Error)
	}
	t.Logf("optmem: %s", got.Error)
}
