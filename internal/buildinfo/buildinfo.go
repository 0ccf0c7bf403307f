package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// version is set at link time (-ldflags -X); when set it wins over the
// module version, which is "(devel)" for a build from a work tree.
var version string

// Devel is the version of a build that has neither an -ldflags version nor
// a module version (go build in a work tree, go test).
const Devel = "devel"

// The peeragent_build_info gauge: always 1, its labels say which build runs.
const (
	MetricName = "peeragent_build_info"
	MetricHelp = "A metric with a constant '1' value labeled by the version, VCS revision and Go version peeragent was built with."
)

// Info describes a build.
type Info struct {
	// Version is the -ldflags version, else the module version (v1.2.3 for
	// go install ...@v1.2.3), else Devel.
	Version string `json:"version"`
	// Revision, Time and Modified come from the VCS stamp (vcs.revision,
	// vcs.time, vcs.modified); empty when the build had none (-buildvcs=false,
	// go test, a build outside a repository).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// GoVersion is the toolchain, e.g. go1.26.8; Platform is GOOS/GOARCH.
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

var read = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return FromBuildInfo(version, bi)
})

// Read returns the running binary's Info.
func Read() Info { return read() }

// FromBuildInfo computes an Info from an -ldflags version (may be empty)
// and the binary's build information (may be nil).
func FromBuildInfo(ldflagsVersion string, bi *debug.BuildInfo) Info {
	info := Info{Version: ldflagsVersion, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if info.Version == "" {
			info.Version = Devel
		}
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Version == "" {
		info.Version = Devel
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" && goarch != "" {
		info.Platform = goos + "/" + goarch
	}
	return info
}

// Labels are the labels of the peeragent_build_info gauge: version,
// revision ("unknown" without a VCS stamp) and goversion. The map is new on
// each call; it converts to prometheus.Labels as it is.
func (i Info) Labels() map[string]string {
	rev := i.Revision
	if rev == "" {
		rev = "unknown"
	}
	return map[string]string{"version": i.Version, "revision": rev, "goversion": i.GoVersion}
}
