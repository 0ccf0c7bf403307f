package bird

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

const (
	// startTimeout bounds the wait for the control socket to answer.
	startTimeout = 10 * time.Second
	// stopTimeout is how long SIGTERM gets before SIGKILL.
	stopTimeout = 5 * time.Second
	// birdcTimeout bounds one birdc call.
	birdcTimeout = 10 * time.Second
	// maxSocketPath keeps the control socket under sun_path's 108 bytes.
	maxSocketPath = 100
)

// Bird is one running BIRD daemon, owned by the test that started it.
// Its methods are safe for concurrent use.
type Bird struct {
	t    testing.TB
	bins binaries
	dir  string // holds bird.conf
	conf string
	sock string
	proc *daemon.Process
	out  *logBuffer

	mu       sync.Mutex // guards cfg
	cfg      Config     // a deep copy: the caller's slices are not shared
	stopOnce sync.Once
}

// Start writes cfg as bird.conf into a new t.TempDir(), runs
// `bird -f -c CONF -s SOCK` in the foreground with its output captured, and
// returns once the control socket answers (within 10 s). A cleanup stops
// BIRD (SIGTERM, then SIGKILL after 5 s) and waits for it; when the test
// failed, the cleanup logs BIRD's output. Start calls Require first, so a
// missing BIRD skips the test (fails it under CI=true). Bird keeps a deep
// copy of cfg: changing cfg's slices afterwards does not change Config.
func Start(t testing.TB, cfg Config) *Bird {
	t.Helper()
	Require(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	bins, _ := programs.Lookup()
	b := &Bird{t: t, bins: bins, dir: t.TempDir(), cfg: cfg.clone(), out: &logBuffer{}}
	b.conf = filepath.Join(b.dir, "bird.conf")
	b.sock = filepath.Join(daemon.SocketDir(t, "birdtest", b.dir, "bird.ctl", maxSocketPath), "bird.ctl")
	if err := daemon.WriteFileAtomic(b.conf, cfg.Render()); err != nil {
		t.Fatalf("birdtest: %v", err)
	}
	cmd, err := b.command(cfg.Netns)
	if err != nil {
		t.Fatalf("birdtest: %v", err)
	}
	b.proc, err = daemon.Start("bird", cmd, b.out)
	if err != nil {
		t.Fatalf("birdtest: start %s: %v", b.bins.bird, err)
	}
	t.Cleanup(b.cleanup)
	ready := func() error { _, err := b.Exec("show", "status"); return err }
	if err = b.proc.WaitReady(startTimeout, "control socket", ready); err != nil {
		t.Fatalf("birdtest: %s: %v\nbird.conf:\n%s", b, err, cfg.Render()) // the cleanup logs the output
	}
	return b
}

// command is `bird -f -c CONF -s SOCK`, inside the named network
// namespace when netns is set. ip netns exec execs bird, so the process
// Start watches (and kills when the test binary dies) is BIRD itself.
func (b *Bird) command(netns string) (*exec.Cmd, error) {
	args := []string{"-f", "-c", b.conf, "-s", b.sock}
	if netns == "" {
		return exec.Command(b.bins.bird, args...), nil
	}
	ip, err := daemon.LookPath(sbinDirs, "ip")
	if err != nil {
		return nil, fmt.Errorf("BIRD in network namespace %s: %w", netns, err)
	}
	return exec.Command(ip, append([]string{"netns", "exec", netns, b.bins.bird}, args...)...), nil
}

func (b *Bird) cleanup() {
	b.Stop()
	if b.t.Failed() {
		b.t.Logf("birdtest: %s output:\n%s", b, b.Log())
	}
}

// Stop ends BIRD (SIGTERM, SIGKILL after 5 s) and waits for it to exit.
// It is idempotent; the cleanup calls it too. A test may call it to make the
// peer disappear.
func (b *Bird) Stop() {
	b.stopOnce.Do(func() { _ = b.proc.Stop(stopTimeout) })
}

// Kill ends BIRD abruptly (SIGKILL) and waits for it: no shutdown of its
// own, no NOTIFICATION; the kernel closes its sockets, so a peer sees its
// sessions end as a read failure, a graceful-restart cause (RFC 4724).
// Stop, which sends SIGTERM first, lets BIRD close its sessions with a
// Cease instead. A later Stop (the cleanup's) does nothing.
func (b *Bird) Kill() error { return b.proc.Kill() }

// Exec runs `birdc -s SOCK ARGS...` and returns its output without the
// "BIRD x.y.z ready." banner. birdc's non-zero exit (BIRD answered with an
// error, or the socket is gone) is an error holding the output.
func (b *Bird) Exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), birdcTimeout)
	defer cancel()
	cmdArgs := append([]string{"-s", b.sock}, args...)
	raw, err := exec.CommandContext(ctx, b.bins.birdc, cmdArgs...).CombinedOutput()
	out := stripBanner(string(raw))
	if err != nil {
		return out, fmt.Errorf("birdc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	return out, nil
}

func stripBanner(s string) string {
	first, rest, ok := strings.Cut(s, "\n")
	if ok && strings.HasPrefix(first, "BIRD ") && strings.HasSuffix(first, " ready.") {
		return rest
	}
	return s
}

// Reconfigure rewrites bird.conf from cfg and runs `birdc configure`.
// BIRD restarts only the protocols whose configuration changed (a new
// password, AS, port...); an unchanged protocol keeps its session, which
// its Since in Protocols shows. When BIRD rejects cfg, the old
// configuration stays active and bird.conf is put back. Like Start, it
// keeps a deep copy of cfg.
func (b *Bird) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := daemon.WriteFileAtomic(b.conf, cfg.Render()); err != nil {
		return fmt.Errorf("birdtest: %w", err)
	}
	if err := b.configure(); err != nil {
		_ = daemon.WriteFileAtomic(b.conf, b.cfg.Render())
		return err
	}
	b.cfg = cfg.clone()
	return nil
}

func (b *Bird) configure() error {
	out, err := b.Exec("configure")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Reconfigured") && !strings.Contains(out, "Reconfiguration in progress") {
		return fmt.Errorf("birdc configure: unexpected answer: %s", strings.TrimSpace(out))
	}
	return nil
}

// Config is (a copy of) the configuration BIRD currently runs.
func (b *Bird) Config() Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.clone()
}

// ConfigPath is bird.conf's path; SocketPath the control socket's.
func (b *Bird) ConfigPath() string { return b.conf }

// SocketPath is the control socket, for running birdc by hand.
func (b *Bird) SocketPath() string { return b.sock }

// Log is what BIRD printed so far (its log goes to stderr: protocol state
// changes and events, errors), the last 4 MiB at most.
func (b *Bird) Log() string { return b.out.String() }

// Establishments is how many times the named BGP session entered
// Established since Start, counted from the "NAME: BGP session
// established" lines of BIRD's debug log. It is exact where Since is
// a time: a second session that came up within SinceJitter still counts.
func (b *Bird) Establishments(name string) int { return b.out.establishedCount(name) }

// String names the instance by its local address and port.
func (b *Bird) String() string {
	cfg := b.Config()
	s := fmt.Sprintf("bird %s port %d AS %d", cfg.Address, cfg.Port, cfg.AS)
	if cfg.Netns != "" {
		s += " in netns " + cfg.Netns
	}
	return s
}

// Exited reports whether the BIRD process has ended, and its exit status.
func (b *Bird) Exited() (bool, error) { return b.proc.Exited() }
