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
	// zebra and zout are zebra's process and output, with Config.Zebra.
	zebra *daemon.Process
	zout  *logBuffer

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
// 10 s). With cfg.Namespace both daemons run through `ip netns exec NS`.
// With cfg.Zebra, zebra starts first, as root with the vty group zebra
// was built with (its privilege setup insists that the user belongs to
// it), on a zserv socket in DIR:
//
//	zebra -u root -g VTYGROUP -z DIR/zserv.api --vty_socket DIR -P 0 -f zebra.conf -i zebra.pid --log stdout
//
// and bgpd, once zebra answers, gets -z DIR/zserv.api instead of -Z;
// Start then also waits until zebra lists bgpd as its client. It fails
// the test when bgpd logged a config line it could not apply. A cleanup
// stops bgpd, then zebra (SIGTERM, then SIGKILL after 5 s) and waits for
// them; when the test failed, the cleanup logs their output. Start calls
// Require first, so a missing FRR skips the test (fails it under CI=true).
func Start(t testing.TB, cfg Config) *FRR {
	t.Helper()
	Require(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Zebra {
		requireZebra(t)
	}
	if cfg.Namespace != "" {
		requireIP(t)
	}
	bins, _ := programs.Lookup()
	f := &FRR{t: t, bins: bins, dir: t.TempDir(), cfg: cfg.clone(), out: &logBuffer{}}
	f.name = fmt.Sprintf("frr %s port %d AS %d", cfg.Address, cfg.Port, cfg.AS)
	if cfg.Namespace != "" {
		f.name += " in " + cfg.Namespace
	}
	f.conf = filepath.Join(f.dir, "bgpd.conf")
	f.vtyDir = daemon.SocketDir(t, "frrtest", f.dir, "bgpd.vty", maxSocketPath)
	if err := f.check(cfg); err != nil {
		t.Fatal(err)
	}
	if err := daemon.WriteFileAtomic(f.conf, cfg.Render()); err != nil {
		t.Fatalf("frrtest: %v", err)
	}
	t.Cleanup(f.cleanup) // before launch: a zebra that started stops with it
	if err := f.launch(); err != nil {
		t.Fatalf("frrtest: start %s: %v", f, err)
	}
	if err := f.waitReady(startTimeout); err != nil {
		t.Fatalf("frrtest: %s: %v\nbgpd.conf:\n%s", f, err, cfg.Render()) // the cleanup logs the output
	}
	return f
}

func (f *FRR) launch() (err error) {
	cfg := f.cfg
	zebra := []string{"-Z"}
	if cfg.Zebra {
		if err := f.launchZebra(); err != nil {
			return err
		}
		zebra = []string{"-z", f.zservPath()}
	}
	// -Z: no zebra (with Config.Zebra, -z: zebra's socket); -S: no
	// capability checks and no switch to user frr, so it runs as whoever
	// runs the test, on files in a temp dir; -P 0: no TCP vty (the
	// default 2605 would clash between instances).
	cmd := f.command(f.bins.bgpd, append(zebra, "-S",
		"-p", strconv.Itoa(cfg.Port), "-l", cfg.Address.String(), "-P", "0",
		"--vty_socket", f.vtyDir, "-f", f.conf, "-i", filepath.Join(f.dir, "bgpd.pid"),
		"--log", "stdout")...)
	f.proc, err = daemon.Start("bgpd", cmd, f.out)
	return err
}

// command runs bin with args, in cfg.Namespace when there is one: ip
// netns exec execs bin, so the process is the daemon's own.
func (f *FRR) command(bin string, args ...string) *exec.Cmd {
	if f.cfg.Namespace == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", f.cfg.Namespace, bin}, args...)...)
}

func (f *FRR) zservPath() string { return filepath.Join(f.vtyDir, "zserv.api") }

// launchZebra starts zebra and waits until it answers on its vty and its
// zserv socket exists, so that bgpd finds it at once (bgpd retries a
// missing zebra only slowly).
func (f *FRR) launchZebra() error {
	conf := filepath.Join(f.dir, "zebra.conf")
	if err := daemon.WriteFileAtomic(conf, f.cfg.RenderZebra()); err != nil {
		return err
	}
	group := f.bins.vtyGroup
	if group == "" {
		group = "root"
	}
	f.zout = &logBuffer{}
	p, err := daemon.Start("zebra", f.command(f.bins.zebra, "-u", "root", "-g", group,
		"-z", f.zservPath(), "--vty_socket", f.vtyDir, "-P", "0", "-f", conf,
		"-i", filepath.Join(f.dir, "zebra.pid"), "--log", "stdout"), f.zout)
	if err != nil {
		return err
	}
	f.zebra = p
	return p.WaitReady(startTimeout, "zebra's vty and zserv socket", func() error {
		if _, err := f.vtysh("zebra", "show interface brief"); err != nil {
			return err
		}
		_, err := os.Stat(f.zservPath())
		return err
	})
}

// waitReady polls until bgpd shows every configured neighbor: bgpd reads
// its config file before it serves the vty, so this is a formality, but a
// cheap one. Then it checks the log for config lines bgpd rejected.
func (f *FRR) waitReady(timeout time.Duration) error {
	if err := f.proc.WaitReady(timeout, "vtysh", f.hasNeighbors); err != nil {
		return err
	}
	if f.cfg.Zebra {
		if err := f.proc.WaitReady(timeout, "zebra's client bgp", f.zebraHasBGP); err != nil {
			return err
		}
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

// zebraHasBGP: zebra lists bgpd among its clients, so bgpd learns the
// interfaces and their addresses.
func (f *FRR) zebraHasBGP() error {
	out, err := f.vtysh("zebra", "show zebra client summary")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(out, "\n") {
		if fs := strings.Fields(l); len(fs) > 0 && fs[0] == "bgp" {
			return nil
		}
	}
	return fmt.Errorf("zebra has no client bgp yet: %q", out)
}

func (f *FRR) cleanup() {
	f.Stop()
	if f.t.Failed() {
		f.t.Logf("frrtest: %s output:\n%s", f, f.Log())
		if f.zout != nil {
			f.t.Logf("frrtest: %s zebra's output:\n%s", f, f.zout.String())
		}
	}
}

// Stop ends bgpd (SIGTERM, SIGKILL after 5 s) and waits for it to exit.
// It is idempotent; the cleanup calls it too. A test may call it to make
// the peer disappear.
func (f *FRR) Stop() {
	f.stopOnce.Do(func() {
		// bgpd first: zebra going first would make bgpd log the loss.
		for _, d := range []struct {
			name string
			p    *daemon.Process
		}{{"bgpd", f.proc}, {"zebra", f.zebra}} {
			if d.p == nil {
				continue
			}
			_ = d.p.Stop(stopTimeout)
			// Left behind only when the daemon did not exit cleanly.
			_ = os.RemoveAll(filepath.Join(crashlogDir, fmt.Sprintf("%s.%d", d.name, d.p.Pid())))
		}
	})
}

// Exec runs `vtysh --vty_socket DIR -d bgpd -c CMD...`, one -c per
// command, in order, in one vty session (so "configure terminal" then
// "router bgp AS" then a neighbor command works), and returns vtysh's
// standard output. vtysh's non-zero exit (a command FRR rejected, or bgpd
// gone) is an error holding its output.
func (f *FRR) Exec(cmds ...string) (string, error) { return f.vtysh("bgpd", cmds...) }

// ExecZebra is Exec on zebra (Config.Zebra only): `show interface`, `show
// ipv6 route`...
func (f *FRR) ExecZebra(cmds ...string) (string, error) {
	if f.zebra == nil {
		return "", fmt.Errorf("frrtest: %s runs without zebra", f)
	}
	return f.vtysh("zebra", cmds...)
}

func (f *FRR) vtysh(daemon string, cmds ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), vtyshTimeout)
	defer cancel()
	args := []string{"--vty_socket", f.vtyDir, "-d", daemon, "-H", filepath.Join(f.dir, "vtysh.history")}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, f.bins.vtysh, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("vtysh -d %s -c %q: %w: %s", daemon, cmds, err,
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
