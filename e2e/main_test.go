package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain skips the whole package under -short (every test here runs the
// agent, a daemon or the API server) and removes the agent binary
// buildAgent built.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: not under -short (the tests of the whole agent)")
		os.Exit(0)
	}
	code := m.Run()
	if agentBin.dir != "" {
		os.RemoveAll(agentBin.dir)
	}
	os.Exit(code)
}
