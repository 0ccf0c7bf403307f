package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/peeragent/peeragent/internal/testrig/daemon"
)

// The versions that tools/apiserver/go.mod pins; build.sh names its cache
// directory after them. TestVersionsMatchBuildModule keeps them in step.
const (
	K8sVersion  = "v1.37.2"
	EtcdVersion = "v3.7.0"
)

// Binaries are the paths of the two programs a Cluster runs.
type Binaries struct {
	APIServer, Etcd string
}

// programs are kube-apiserver and etcd, found once per process, for Require.
var programs = &daemon.Programs[Binaries]{Find: find, Dependency: daemon.Dependency{What: "API server", Tests: "Real-cluster tests"},
	NotAvailable: "!!! KUBE-APISERVER/ETCD NOT AVAILABLE: %v. Build them with `make apiserver` " +
		"(tools/apiserver/build.sh) or set KUBEBUILDER_ASSETS."}

// Find locates kube-apiserver and etcd: in $KUBEBUILDER_ASSETS when it is
// set, else in CacheDir(). The answer is computed once per process.
func Find() (Binaries, error) { return programs.Lookup() }

func find() (Binaries, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	from := "$KUBEBUILDER_ASSETS"
	if dir == "" {
		d, err := CacheDir()
		if err != nil {
			return Binaries{}, err
		}
		dir, from = d, "the build cache"
	}
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	for _, p := range []string{b.APIServer, b.Etcd} {
		if err := daemon.Executable(p); err != nil {
			return Binaries{}, fmt.Errorf("%s (%s): %w", p, from, err)
		}
	}
	return b, nil
}

// CacheDir is where tools/apiserver/build.sh puts the binaries:
// ${PEERAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peeragent}/apiserver-K8S-etcd-ETCD.
func CacheDir() (string, error) {
	root := os.Getenv("PEERAGENT_CACHE")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: %w", err)
		}
		root = filepath.Join(c, "peeragent")
	}
	return filepath.Join(root, "apiserver-"+K8sVersion+"-etcd-"+EtcdVersion), nil
}

// Require makes the test depend on kube-apiserver and etcd: when either is
// missing it skips the test with a loud reason (also printed once on stderr,
// as go test shows skip reasons only with -v), except under CI=true, where
// it fails the test instead.
func Require(t testing.TB) {
	t.Helper()
	programs.Require(t)
}
