package watch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/peeragent/peeragent/state"
)

// Kernel is the source of the kernel facts the reducer checks TCP-MD5
// against (docs/semantics.md §4): the TCP-MD5 failure counters of the
// network namespace the agent (and so its speaker) runs in, and
// net.core.optmem_max, which bounds the keys one listening socket can
// hold. It lives in watch/ because, like the other sources, it only
// observes and turns what it sees into Actions; it carries out no effect.
// Both files are procfs text, read with a size bound (they never block).
type Kernel struct {
	// Proc is the procfs mount ("/proc" if empty).
	Proc string
	// Interval is the time between two reads (5 s if zero).
	Interval time.Duration
	// Log receives read errors, once per kind of failure in a row.
	Log *slog.Logger

	md5      uint64
	md5Read  bool
	optmem   int64
	lastErrs string
}

// md5Counters are the TcpExt counters of /proc/net/netstat a TCP-MD5
// signature problem increments: a wrong signature, a missing one where a
// key is configured, and one where none is.
var md5Counters = []string{"TCPMD5Failure", "TCPMD5NotFound", "TCPMD5Unexpected"}

// maxProcRead bounds a read of one procfs file.
const maxProcRead = 256 << 10

// Run reads both facts at once and then every Interval until ctx ends,
// dispatching state.KernelLimitsObserved when optmem_max is first read or
// changes, and state.MD5FailuresObserved when the counters' total is first
// read or changes. It returns nil when ctx ends.
func (k *Kernel) Run(ctx context.Context, dispatch func(state.Action)) error {
	every := k.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, a := range k.Poll(time.Now()) {
			dispatch(a)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads both facts once and returns the Actions for what changed.
func (k *Kernel) Poll(now time.Time) []state.Action {
	var out []state.Action
	var errs []string
	if v, err := k.readOptmem(); err != nil {
		errs = append(errs, err.Error())
	} else if v != k.optmem {
		k.optmem = v
		out = append(out, state.KernelLimitsObserved{OptmemMax: v})
	}
	if v, err := k.readMD5Failures(); err != nil {
		errs = append(errs, err.Error())
	} else if !k.md5Read || v != k.md5 {
		k.md5, k.md5Read = v, true
		out = append(out, state.MD5FailuresObserved{Count: v, At: now})
	}
	if e := strings.Join(errs, "; "); e != k.lastErrs {
		k.lastErrs = e
		if e != "" && k.Log != nil {
			k.Log.Warn("kernel facts unreadable; the TCP-MD5 checks go without them", "error", e)
		}
	}
	return out
}

func (k *Kernel) path(rel string) string {
	root := k.Proc
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(root, rel)
}

func (k *Kernel) read(rel string) ([]byte, error) {
	f, err := os.Open(k.path(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxProcRead))
}

func (k *Kernel) readOptmem() (int64, error) {
	b, err := k.read("sys/net/core/optmem_max")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("net.core.optmem_max: not a positive number: %q", bytes.TrimSpace(b))
	}
	return v, nil
}

func (k *Kernel) readMD5Failures() (uint64, error) {
	b, err := k.read("net/netstat")
	if err != nil {
		return 0, err
	}
	return md5Failures(b)
}

// md5Failures sums md5Counters in the text of /proc/net/netstat: pairs
// of lines "TcpExt: names..." and "TcpExt: values...". A kernel without
// one of them (built without TCP-MD5) counts it as 0.
func md5Failures(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxProcRead)
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TcpExt:" {
			names = nil
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		if len(f)-1 != len(names) {
			return 0, fmt.Errorf("/proc/net/netstat: TcpExt has %d names and %d values", len(names), len(f)-1)
		}
		var sum uint64
		for i, n := range names {
			for _, want := range md5Counters {
				if n == want {
					v, err := strconv.ParseUint(f[i+1], 10, 64)
					if err != nil {
						return 0, fmt.Errorf("/proc/net/netstat: %s: %v", n, err)
					}
					sum += v
				}
			}
		}
		return sum, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("/proc/net/netstat: %v", err)
	}
	return 0, fmt.Errorf("/proc/net/netstat: no TcpExt counters")
}
