package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFileAtomic replaces path with text (mode 0600) through a rename, so
// a daemon never reads a half-written file.
func WriteFileAtomic(path, text string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SocketDir is dir, or a new shorter temp dir (removed by a cleanup) when
// dir/socket would be longer than maxLen bytes: a unix socket path must fit
// in sun_path's 108 bytes, and long test names make long TempDirs. prefix
// (the harness's name) names the temp dir and starts a failure message.
func SocketDir(t testing.TB, prefix, dir, socket string, maxLen int) string {
	if len(filepath.Join(dir, socket)) <= maxLen {
		return dir
	}
	short, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("%s: %v", prefix, err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	return short
}
