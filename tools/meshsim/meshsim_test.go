package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	birdrig "github.com/peeragent/peeragent/internal/testrig/bird"
)

func TestWriteDocReplacesItsSectionOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.md")
	before := "# Performance\n\n## Result\n\nr\n\n" + sectionHeading + "\n\nold table\n\n## GoBGP releases side by side\n\ng\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(path, sectionHeading+"\n\nnew table\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# Performance\n\n## Result\n\nr\n\n" + sectionHeading + "\n\nnew table\n\n## GoBGP releases side by side\n\ng\n"
	if string(got) != want {
		t.Errorf("document:\n%s\nwant:\n%s", got, want)
	}
	// Without the section, it is appended.
	if err := os.WriteFile(path, []byte("# Performance\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(path, sectionHeading+"\n\nt\n"); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if string(got) != "# Performance\n\n"+sectionHeading+"\n\nt\n" {
		t.Errorf("document: %q", got)
	}
}

// TestBirdConfigParses has BIRD 2 parse the configuration of one node of
// a 3-node mesh (bird -p: parse and exit).
func TestBirdConfigParses(t *testing.T) {
	birdrig.Require(t)
	topo := newTopology(3, "test")
	for _, nd := range topo.nodes {
		dir := t.TempDir()
		if err := (bird{}).prepare(topo, nd, dir); err != nil {
			t.Fatal(err)
		}
		bin, err := exec.LookPath("bird")
		if err != nil {
			bin = "/usr/sbin/bird"
		}
		cmd := exec.Command(bin, "-p", "-c", filepath.Join(dir, "bird.cfg"))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: bird -p: %v\n%s", nd.name, err, out)
		}
		cfg, _ := os.ReadFile(filepath.Join(dir, "bird.cfg"))
		// Passive toward the peers whose address text sorts higher.
		if n := strings.Count(string(cfg), "passive on;"); n != 3-nd.index {
			t.Errorf("%s: %d passive sessions, want %d", nd.name, n, 3-nd.index)
		}
	}
}

// TestSmoke runs the whole simulation at N=3 with short windows. It makes
// namespaces and runs every speaker (the agent, the GoBGP floor with and
// without prefix limit, BIRD), so it runs only when asked
// (MESHSIM_SMOKE=1, as root, with bird2): not part of make test.
func TestSmoke(t *testing.T) {
	if os.Getenv("MESHSIM_SMOKE") != "1" {
		t.Skip("set MESHSIM_SMOKE=1 (root, bird2) to run the 3-node simulation")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "peeragent")
	build := exec.Command("go", append([]string{"build"}, append(releaseBuildFlags, "-o", bin, "github.com/peeragent/peeragent/cmd/peeragent")...)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	floorBin := filepath.Join(dir, "meshsim-floor")
	build = exec.Command("go", append([]string{"build"}, append(releaseBuildFlags, "-o", floorBin, "github.com/peeragent/peeragent/tools/meshsim/floor/cmd/meshsim-floor")...)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := config{sizes: []int{3}, speakers: []string{"peeragent", "gobgp", "gobgp-nolimit", "bird"}, idle: time.Second, settle: time.Second,
		restart: 0.2, observers: 2, timeout: time.Minute, agentBin: bin, floorBin: floorBin}
	rep, err := measure(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.markdown())
	if len(rep.runs) != 4 {
		t.Fatalf("%d runs, want 4", len(rep.runs))
	}
	for _, r := range rep.runs {
		if r.converge <= 0 || r.reconverge <= 0 || len(r.rss) != 3 || len(r.anon) != 3 || len(r.pss) != 3 || len(r.cpuConverge) != 3 || len(r.idleCPU) != 3 {
			t.Errorf("%s: incomplete result %+v", r.speaker, r)
		}
		for i, v := range r.rss {
			if v <= 0 || r.cpuConverge[i] <= 0 || r.anon[i] <= 0 || r.anon[i] > v || r.pss[i] <= 0 || r.pss[i] > v {
				t.Errorf("%s: node %d: RSS %d, RssAnon %d, PSS %d, CPU %v", r.speaker, i+1, v, r.anon[i], r.pss[i], r.cpuConverge[i])
			}
		}
		if len(r.restarted) != 1 || r.sessions != 2 || len(r.observers) != 2 {
			t.Errorf("%s: restarted %v (%d sessions), observers %v; want 1 node, 2 sessions, 2 observers", r.speaker, r.restarted, r.sessions, r.observers)
		}
		// Graceful restart keeps the observers' kernels untouched.
		if r.routeNew != 0 || r.routeDel != 0 {
			t.Errorf("%s: observers saw %d route changes and %d deletes: %v", r.speaker, r.routeNew, r.routeDel, r.routeSeen)
		}
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if mine := fmt.Sprintf("%s%d-", nsPrefix, os.Getpid()); strings.Contains(string(out), mine) {
		t.Errorf("namespaces %s* left behind:\n%s", mine, out)
	}
}

func TestMarkdownTablePerSizeAndFit(t *testing.T) {
	run := func(sp string, n int, rssMiB int64) runResult {
		return runResult{speaker: sp, n: n, rss: []int64{rssMiB << 20}, anon: []int64{rssMiB << 19}, pss: []int64{(rssMiB - 1) << 20},
			cpuConverge: []time.Duration{time.Second},
			idleCPU:     []float64{0.01}, converge: time.Second, reconverge: 2 * time.Second, logs: map[string]int{}}
	}
	rep := report{sizes: []int{11, 21}, runs: []runResult{
		run("peeragent", 11, 60), run("BIRD 2", 11, 5), run("peeragent", 21, 70), run("BIRD 2", 21, 6)}}
	md := rep.markdown()
	for _, want := range []string{
		"| per speaker, N = 11 (median (min–max) over the nodes) | peeragent | BIRD 2 | ratio |",
		"| per speaker, N = 21 (median (min–max) over the nodes) | peeragent | BIRD 2 | ratio |",
		"| RSS (VmRSS) after convergence and the idle window | 60.0 MiB (60.0 MiB–60.0 MiB) | 5.0 MiB (5.0 MiB–5.0 MiB) | 12x |",
		"| of which anonymous (RssAnon: the process's own) | 30.0 MiB (30.0 MiB–30.0 MiB) | 2.5 MiB (2.5 MiB–2.5 MiB) | 12x |",
		"| PSS (file pages shared by the N speakers divided among them) | 59.0 MiB (59.0 MiB–59.0 MiB) | 4.0 MiB (4.0 MiB–4.0 MiB) | 15x |",
		"- peeragent RSS, fitted over 2 runs: 50.0 MiB + 1.000 MiB per neighbor",
		"- peeragent RssAnon, fitted over 2 runs: 25.0 MiB + 0.500 MiB per neighbor",
		"- BIRD 2 RSS, fitted over 2 runs: 4.0 MiB + 0.100 MiB per neighbor",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if s := rep.section(); !strings.Contains(s, "make mesh-sim N=11,21") {
		t.Errorf("section does not name the command:\n%s", s)
	}
}

// TestReleaseBuildFlags: the simulation builds the agent with the flags
// the image's builder (tools/image) and make build use, so that it
// measures the binary a node runs.
func TestReleaseBuildFlags(t *testing.T) {
	image, err := os.ReadFile("../image/build.go")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"build", "-trimpath",`, `"-ldflags", "-s -w -X "`, `"CGO_ENABLED=0"`} {
		if !strings.Contains(string(image), want) {
			t.Errorf("tools/image/build.go no longer has %s: update releaseBuildFlags", want)
		}
	}
	if want := `CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)"`; !strings.Contains(string(makefile), want) {
		t.Errorf("the Makefile's build no longer has %s", want)
	}
	if got := strings.Join(releaseBuildFlags, " "); got != "-trimpath -ldflags -s -w" {
		t.Errorf("releaseBuildFlags = %q", got)
	}
}

// TestMarkdownRatiosOfThreeSpeakers: with the floor between the agent and
// BIRD, the table has a ratio column for each speaker to the next and
// one for the first to the last.
func TestMarkdownRatiosOfThreeSpeakers(t *testing.T) {
	run := func(sp string, cpu time.Duration) runResult {
		return runResult{speaker: sp, n: 50, rss: []int64{1 << 20}, anon: []int64{1 << 20}, pss: []int64{1 << 20},
			cpuConverge: []time.Duration{cpu}, idleCPU: []float64{0.01}, converge: time.Second, reconverge: time.Second, logs: map[string]int{}}
	}
	rep := report{sizes: []int{50}, runs: []runResult{run("peeragent", 120*time.Millisecond), run("GoBGP floor", 60*time.Millisecond), run("BIRD 2", 30*time.Millisecond)}}
	md := rep.markdown()
	for _, want := range []string{
		"| per speaker, N = 50 (median (min–max) over the nodes) | peeragent | GoBGP floor | BIRD 2 | peeragent / GoBGP floor | GoBGP floor / BIRD 2 | peeragent / BIRD 2 |\n|---|---|---|---|---|---|---|\n",
		"| CPU to converge (from the speaker's start) | 0.120 CPU-s (0.120 CPU-s–0.120 CPU-s) | 0.060 CPU-s (0.060 CPU-s–0.060 CPU-s) | 0.030 CPU-s (0.030 CPU-s–0.030 CPU-s) | 2x | 2x | 4x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSlug(t *testing.T) {
	for name, want := range map[string]string{"peeragent": "peeragent", "BIRD 2": "BIRD-2", "GoBGP floor, no prefix limit": "GoBGP-floor-no-prefix-limit"} {
		if got := slug(name); got != want {
			t.Errorf("slug(%q) = %q, want %q", name, got, want)
		}
	}
}
