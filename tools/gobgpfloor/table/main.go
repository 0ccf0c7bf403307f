// Command table prints the markdown table of docs/performance.md's section
// "GoBGP releases side by side (floor, no agent)" from a floor.txt that
// run.sh wrote: one column per GoBGP release, each cell the median over the
// runs (the number of runs in parentheses when more than one).
//
//	go run ./table floor.txt
package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// key is one benchmark line's name, split.
type key struct{ op, neighbors, families, gobgp string }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: table floor.txt")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	vals := map[key]map[string][]float64{} // unit -> samples
	var versions []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkFloor/") {
			continue
		}
		param := map[string]string{} // op=add -> "op": "add"
		for _, part := range strings.Split(fields[0], "/")[1:] {
			name, v, _ := strings.Cut(part, "=")
			param[name] = v
		}
		k := key{param["op"], param["neighbors"], param["families"], param["gobgp"]}
		if !slices.Contains(versions, k.gobgp) {
			versions = append(versions, k.gobgp)
		}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err == nil {
				vals[k][fields[i+1]] = append(vals[k][fields[i+1]], v)
			}
		}
	}
	slices.SortFunc(versions, compareVersions)

	type row struct {
		label, op, families, unit string
		format                    func(float64) string
	}
	dur := func(v float64) string {
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.1f s", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.2f ms", v/1e6)
		default:
			return fmt.Sprintf("%.0f µs", v/1e3)
		}
	}
	secs := func(v float64) string { return fmt.Sprintf("%.2f s", v) }
	rate := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	kib := func(v float64) string { return fmt.Sprintf("%.1f KiB", v/1024) }
	mib := func(v float64) string { return fmt.Sprintf("%.0f MiB", v) }
	rows := []row{
		{"AddPeer: configure all, total", "add", "ipv4", "configure-s", secs},
		{"AddPeer per call, median", "add", "ipv4", "p50-ns", dur},
		{"AddPeer per call, p99", "add", "ipv4", "p99-ns", dur},
		{"in-place UpdatePeer (hold time), median", "update-inplace", "ipv4", "p50-ns", dur},
		{"in-place UpdatePeer, p99", "update-inplace", "ipv4", "p99-ns", dur},
		{"in-place UpdatePeer, bare loop", "update-inplace", "ipv4", "calls/s", rate},
		{"resetting UpdatePeer (peer AS), median", "update-reset", "ipv4", "p50-ns", dur},
		{"resetting UpdatePeer, p99", "update-reset", "ipv4", "p99-ns", dur},
		{"resetting UpdatePeer, bare loop", "update-reset", "ipv4", "calls/s", rate},
		{"DeletePeer per call, median", "delete", "ipv4", "p50-ns", dur},
		{"DeletePeer per call, p99", "delete", "ipv4", "p99-ns", dur},
		{"heap per neighbor, ipv4", "heap", "ipv4", "B/neighbor", kib},
		{"heap per neighbor, ipv4+ipv6", "heap", "ipv4+ipv6", "B/neighbor", kib},
		{"heap, speaker + neighbors, ipv4", "heap", "ipv4", "speaker-MiB", mib},
		{"heap, speaker + neighbors, ipv4+ipv6", "heap", "ipv4+ipv6", "speaker-MiB", mib},
		{"AddPeer: configure all, ipv4+ipv6", "add", "ipv4+ipv6", "configure-s", secs},
	}
	var sizes []string
	for k := range vals {
		if !slices.Contains(sizes, k.neighbors) {
			sizes = append(sizes, k.neighbors)
		}
	}
	slices.SortFunc(sizes, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })

	fmt.Printf("| measurement | neighbors |")
	for _, v := range versions {
		fmt.Printf(" %s |", v)
	}
	fmt.Printf("\n|---|---:|")
	for range versions {
		fmt.Printf("---:|")
	}
	fmt.Println()
	for _, r := range rows {
		for _, n := range sizes {
			var cells []string
			any := false
			for _, v := range versions {
				s := vals[key{r.op, n, r.families, v}][r.unit]
				if len(s) == 0 {
					cells = append(cells, "–")
					continue
				}
				any = true
				c := r.format(median(s))
				if len(s) > 1 {
					c += fmt.Sprintf(" (%d)", len(s))
				}
				cells = append(cells, c)
			}
			if any {
				fmt.Printf("| %s | %s | %s |\n", r.label, thousands(n), strings.Join(cells, " | "))
			}
		}
	}
}

func median(s []float64) float64 {
	s = slices.Sorted(slices.Values(s))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func thousands(n string) string {
	if len(n) > 3 {
		return n[:len(n)-3] + "," + n[len(n)-3:]
	}
	return n
}

// compareVersions orders "v3.37.0" before "v4.3.0" before "v4.10.0".
func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return len(pa) - len(pb)
}
