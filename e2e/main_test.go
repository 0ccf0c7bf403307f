package e2e

import (
	"os"
	"testing"
)

// TestMain removes the agent binary buildAgent built.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentBin.dir != "" {
		os.RemoveAll(agentBin.dir)
	}
	os.Exit(code)
}
