package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// results are the benchmark figures of a `go test -bench` output: for each
// benchmark (its name without the -GOMAXPROCS suffix), for each unit, the
// values of every run, in order.
type results map[string]map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseBench reads go test output; lines that are not results are skipped.
func parseBench(r io.Reader) (results, error) {
	out := results{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a header line such as "BenchmarkX" alone, or a log
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		if out[name] == nil {
			out[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			out[name][f[i+1]] = append(out[name][f[i+1]], v)
		}
	}
	return out, sc.Err()
}

// median of a benchmark's unit, and whether there is any value.
func (r results) median(name, unit string) (float64, bool) {
	vs := slices.Clone(r[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// runs is how many results a benchmark has.
func (r results) runs(name string) int {
	n := 0
	for _, vs := range r[name] {
		n = max(n, len(vs))
	}
	return n
}
