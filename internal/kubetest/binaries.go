package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
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

var (
	findOnce sync.Once
	found    Binaries
	findErr  error
	loudOnce sync.Once
)

// Find locates kube-apiserver and etcd: in $KUBEBUILDER_ASSETS when it is
// set, else in CacheDir(). The answer is computed once per process.
func Find() (Binaries, error) {
	findOnce.Do(func() { found, findErr = find() })
	return found, findErr
}

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
		if err := executable(p); err != nil {
			return Binaries{}, fmt.Errorf("%s (%s): %w", p, from, err)
		}
	}
	return b, nil
}

func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular() || st.Mode()&0o111 == 0:
		return errors.New("not an executable file")
	}
	return nil
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
	_, err := Find()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("!!! KUBE-APISERVER/ETCD NOT AVAILABLE: %v. Build them with `make apiserver` "+
		"(tools/apiserver/build.sh) or set KUBEBUILDER_ASSETS.", err)
	if inCI() {
		t.Fatalf("%s Under CI=true a missing API server is a failure, not a skip.", msg)
	}
	loudOnce.Do(func() { fmt.Fprintf(os.Stderr, "%s Real-cluster tests are SKIPPED.\n", msg) })
	t.Skipf("%s SKIPPED.", msg)
}

func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}
