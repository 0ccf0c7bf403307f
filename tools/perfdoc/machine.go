package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the benchmarks ran: lscpu's CPU lines, the Go
// version, and the load before and after (the machine may be shared).
func machine(loadavgPath string, elapsed time.Duration) string {
	var b strings.Builder
	for _, l := range lscpu() {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	fmt.Fprintf(&b, "- Go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if loadavgPath != "" {
		if raw, err := os.ReadFile(loadavgPath); err == nil {
			fmt.Fprintf(&b, "- load average as the benchmarks began: %s\n", loadavg(string(raw)))
		}
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&b, "- load average as they ended: %s\n", loadavg(string(raw)))
	}
	if elapsed > 0 {
		fmt.Fprintf(&b, "- make bench took %s\n", elapsed.Round(time.Second))
	}
	return b.String()
}

// lscpu keeps the lines that say what the CPU is.
func lscpu() []string {
	raw, err := exec.Command("lscpu").Output()
	if err != nil {
		return []string{"CPU: lscpu unavailable"}
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(l, ":")
		switch strings.TrimSpace(k) {
		case "Model name", "CPU(s)", "Thread(s) per core", "Hypervisor vendor", "L2 cache", "L3 cache":
			if ok {
				out = append(out, strings.TrimSpace(k)+": "+strings.TrimSpace(v))
			}
		}
	}
	return out
}

// loadavg is the 1, 5 and 15 minute figures of /proc/loadavg.
func loadavg(s string) string {
	f := strings.Fields(s)
	if len(f) < 3 {
		return strings.TrimSpace(s)
	}
	return strings.Join(f[:3], ", ") + " (1, 5, 15 min)"
}
