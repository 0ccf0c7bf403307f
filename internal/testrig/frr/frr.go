package frr

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

const (
	// startTimeout bounds the wait for the vty socket to answer with the
	// configured neighbors.
	startTimeout = 10 * time.Second
	// stopTimeout is how long SIGTERM gets before SIGKILL.
	stopTimeout = 5 * time.Second
	// vtyshTimeout bounds one vtysh call.
	vtyshTimeout = 10 * time.Second
	// maxSocketPath keeps DIR/bgpd.vty under sun_path's 108 bytes.
	maxSocketPath = 90
	// crashlogDir is where bgpd keeps per-process log buffers
	// (/var/tmp/frr/bgpd.PID); it removes its own on a clean exit only.
	crashlogDir = "/var/tmp/frr"
)

// FRR is one running bgpd, owned by the test that started it. Its methods
// are safe for concurrent use.
type FRR struct {
	t      testing.TB
	bins   binaries
	name   string // for messages: local address, port and AS never change
	dir    string // holds bgpd.conf, bgpd.pid and vtysh's history
	conf   string
	vtyDir string // holds bgpd.vty
	proc   *daemon.Process
	out    *logBuffer

	mu       sync.Mutex // guards cfg; serializes Reconfigure
	cfg      Config
	stopOnce sync.Once
}

// Start has vtysh parse cfg's config text (vtysh -C), writes it as
// bgpd.conf into a new t.TempDir(), runs bgpd in the foreground without
// zebra, its output captured:
//
//	bgpd -Z -S -p PORT -l ADDRESS -P 0 --vty_socket DIR -f bgpd.conf -i bgpd.pid --log stdout
//
// and returns once vtysh answers with every configured neighbor (within
// 10 s). It fails the test when bgpd logged a config line it could not
// apply. A cleanup stops bgpd (SIGTERM, then SIGKILL after 5 s) and waits
// for it; when the test failed, the cleanup logs bgpd's output. Start calls
// Require first, so a missing FRR skips the test (fails it under CI=true).
func Start(t testing.TB, cfg Config) *FRR {
	t.Helper()
	Require(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	bins, _ := lookup()
	f := &FRR{t: t, bins: bins, dir: t.TempDir(), cfg: cfg.clone(), out: &logBuffer{}}
	f.name = fmt.Sprintf("frr %s port %d AS %d", cfg.Address, cfg.Port, cfg.AS)
	f.conf = filepath.Join(f.dir, "bgpd.conf")
	f.vtyDir = daemon.SocketDir(t, "frrtest", f.dir, "bgpd.vty", maxSocketPath)
	if err := f.check(cfg); err != nil {
		t.Fatal(err)
	}
	if err := daemon.WriteFileAtomic(f.conf, cfg.Render()); err != nil {
		t.Fatalf("frrtest: %v", err)
	}
	if err := f.launch(); err != nil {
		t.Fatalf("frrtest: start %s: %v", f.bins.bgpd, err)
	}
	t.Cleanup(f.cleanup)
	if err := f.waitReady(startTimeout); err != nil {
		t.Fatalf("frrtest: %s: %v\nbgpd.conf:\n%s", f, err, cfg.Render()) // the cleanup logs the output
	}
	return f
}

func (f *FRR) launch() (err error) {
	cfg := f.cfg
	// -Z: no zebra; -S: no capability checks and no switch to user frr,
	// so it runs as whoever runs the test, on files in a temp dir; -P 0:
	// no TCP vty (the default 2605 would clash between instances).
	cmd := exec.Command(f.bins.bgpd, "-Z", "-S",
		"-p", strconv.Itoa(cfg.Port), "-l", cfg.Address.String(), "-P", "0",
		"--vty_socket", f.vtyDir, "-f", f.conf, "-i", filepath.Join(f.dir, "bgpd.pid"),
		"--log", "stdout")
	f.proc, err = daemon.Start("bgpd", cmd, f.out)
	return err
}

// waitReady polls until bgpd shows every configured neighbor: bgpd reads
// its config file before it serves the vty, so this is a formality, but a
// cheap one. Then it checks the log for config lines bgpd rejected.
func (f *FRR) waitReady(timeout time.Duration) error {
	if err := f.proc.WaitReady(timeout, "vtysh", f.hasNeighbors); err != nil {
		return err
	}
	if errs := f.out.errors(); len(errs) > 0 {
		return fmt.Errorf("bgpd rejected config lines:\n%s", strings.Join(errs, "\n"))
	}
	return nil
}

func (f *FRR) hasNeighbors() error {
	all, err := f.Neighbors()
	if err != nil {
		return err
	}
	for _, n := range f.Config().Neighbors {
		if _, ok := all[n.Address.String()]; !ok {
			return fmt.Errorf("neighbor %v not configured yet", n.Address)
		}
	}
	return nil
}

func (f *FRR) cleanup() {
	f.Stop()
	if f.t.Failed() {
		f.t.Logf("frrtest: %s output:\n%s", f, f.Log())
	}
}

// Stop ends bgpd (SIGTERM, SIGKILL after 5 s) and waits for it to exit.
// It is idempotent; the cleanup calls it too. A test may call it to make
// the peer disappear.
func (f *FRR) Stop() {
	f.stopOnce.Do(func() {
		_ = f.proc.Stop(stopTimeout)
		// Left behind only when bgpd did not exit cleanly.
		_ = os.RemoveAll(filepath.Join(crashlogDir, fmt.Sprintf("bgpd.%d", f.proc.Pid())))
	})
}

// Exec runs `vtysh --vty_socket DIR -d bgpd -c CMD...`, one -c per
// command, in order, in one vty session (so "configure terminal" then
// "router bgp AS" then a neighbor command works), and returns vtysh's
// standard output. vtysh's non-zero exit (a command FRR rejected, or bgpd
// gone) is an error holding its output.
func (f *FRR) Exec(cmds ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), vtyshTimeout)
	defer cancel()
	args := []string{"--vty_socket", f.vtyDir, "-d", "bgpd", "-H", filepath.Join(f.dir, "vtysh.history")}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, f.bins.vtysh, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("vtysh -c %q: %w: %s", cmds, err,
			strings.TrimSpace(stdout.String()+"\n"+stderr.String()))
	}
	return stdout.String(), nil
}

// Reconfigure makes bgpd run cfg: it runs, through vtysh in "router bgp
// AS", only the commands that turn the running config into cfg (a changed
// neighbor setting is set again, a removed one negated, a removed neighbor
// deleted), then rewrites bgpd.conf. An unchanged neighbor is not touched
// and keeps its session; a neighbor whose password changed has its session
// reset by FRR (once). Address, Port and AS cannot change. The new config
// text is parsed first (vtysh -C), so an unknown setting changes nothing;
// when bgpd still rejects a command, the error says so, Config stays the
// old one and bgpd.conf is not rewritten, but the commands before the
// rejected one stay applied.
func (f *FRR) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cmds, err := commands(f.cfg, cfg)
	if err != nil {
		return err
	}
	if err := f.check(cfg); err != nil {
		return err
	}
	if len(cmds) > 0 {
		all := append([]string{"configure terminal", fmt.Sprintf("router bgp %d", cfg.AS)}, cmds...)
		if _, err := f.Exec(all...); err != nil {
			return fmt.Errorf("frrtest: %s: reconfigure: %w", f, err)
		}
	}
	if err := daemon.WriteFileAtomic(f.conf, cfg.Render()); err != nil {
		return fmt.Errorf("frrtest: %w", err)
	}
	f.cfg = cfg.clone()
	return nil
}

// check has vtysh parse cfg's config text (vtysh -C -f FILE, no daemon
// involved), so a setting FRR does not know fails before anything runs.
func (f *FRR) check(cfg Config) error {
	path := filepath.Join(f.dir, "bgpd.check.conf")
	if err := os.WriteFile(path, []byte(cfg.Render()), 0o600); err != nil {
		return fmt.Errorf("frrtest: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), vtyshTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, f.bins.vtysh, "-C", "-f", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("frrtest: %s: vtysh rejects the config: %w: %s", f, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Config is (a copy of) the configuration bgpd currently runs.
func (f *FRR) Config() Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg.clone()
}

// ConfigPath is bgpd.conf's path.
func (f *FRR) ConfigPath() string { return f.conf }

// VtyDir is the directory holding bgpd's vty socket (bgpd.vty), for
// running `vtysh --vty_socket DIR` by hand.
func (f *FRR) VtyDir() string { return f.vtyDir }

// Log is what bgpd printed so far (its log goes to stdout at debug level,
// with neighbor events), the last 4 MiB at most.
func (f *FRR) Log() string { return f.out.String() }

// String names the instance by its local address, port and AS.
func (f *FRR) String() string { return f.name }

// Exited reports whether the bgpd process has ended, and its exit status.
func (f *FRR) Exited() (bool, error) { return f.proc.Exited() }
