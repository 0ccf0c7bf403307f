package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func stamped(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/peeragent/peeragent", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestFromBuildInfo(t *testing.T) {
	vcs := []string{"vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567",
		"vcs.time", "2025-11-30T12:00:00Z", "vcs.modified", "false", "GOOS", "linux", "GOARCH", "arm64"}
	here := runtime.GOOS + "/" + runtime.GOARCH
	cases := []struct {
		name    string
		ldflags string
		bi      *debug.BuildInfo
		want    Info
	}{
		{"no-build-info", "", nil, Info{Version: Devel, GoVersion: runtime.Version(), Platform: here}},
		{"no-build-info-ldflags", "v0.1.0", nil, Info{Version: "v0.1.0", GoVersion: runtime.Version(), Platform: here}},
		{"work-tree-build", "", stamped("(devel)", vcs...), Info{Version: Devel,
			Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2025-11-30T12:00:00Z",
			GoVersion: "go1.26.8", Platform: "linux/arm64"}},
		{"ldflags-win-over-devel", "v0.2.0-rc.1", stamped("(devel)", vcs...), Info{Version: "v0.2.0-rc.1",
			Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2025-11-30T12:00:00Z",
			GoVersion: "go1.26.8", Platform: "linux/arm64"}},
		{"ldflags-win-over-module-version", "v9.9.9", stamped("v0.1.0"), Info{Version: "v9.9.9", GoVersion: "go1.26.8", Platform: here}},
		{"go-install-at-version", "", stamped("v0.1.0"), Info{Version: "v0.1.0", GoVersion: "go1.26.8", Platform: here}},
		{"modified-work-tree", "", stamped("", "vcs.revision", "abc", "vcs.modified", "true"), Info{Version: Devel,
			Revision: "abc", Modified: true, GoVersion: "go1.26.8", Platform: here}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, FromBuildInfo(c.ldflags, c.bi)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestReadIsThisBinary(t *testing.T) {
	got := Read()
	if got.Version == "" || got.GoVersion != runtime.Version() {
		t.Errorf("Read() = %+v", got)
	}
	if Read() != got {
		t.Error("Read() changed between calls")
	}
}

func TestLabels(t *testing.T) {
	got := Info{Version: "v0.1.0", GoVersion: "go1.26.8"}.Labels()
	want := map[string]string{"version": "v0.1.0", "revision": "unknown", "goversion": "go1.26.8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestBuildInfoGauge: the gauge the metrics code makes from Labels passes
// Prometheus' exposition lint (promtool check metrics).
func TestBuildInfoGauge(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricName, Help: MetricHelp, ConstLabels: Read().Labels()})
	g.Set(1)
	problems, err := testutil.CollectAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	want := "# HELP " + MetricName + " " + MetricHelp + "\n# TYPE " + MetricName + " gauge\n"
	if err := testutil.CollectAndCompare(g, strings.NewReader(want+MetricName+`{goversion="`+runtime.Version()+
		`",revision="`+Read().Labels()["revision"]+`",version="`+Read().Version+`"} 1`+"\n")); err != nil {
		t.Error(err)
	}
}
