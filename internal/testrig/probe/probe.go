// Package probe reads an HTTP endpoint in tests (the agent's /healthz,
// /readyz, /state, /metrics): its status code and body, failing the test
// when nothing answers.
package probe

import (
	"io"
	"net/http"
	"testing"
)

// Get is GET url's status code and body; t fails when the request does.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
