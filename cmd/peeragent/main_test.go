package main

import (
	"os"
	"testing"

	"github.com/peeragent/peeragent/state"
)

// TestMain fixes the password fingerprint key of this test process
// (random per process in the agent), so that testdata/plan-lab-node-a.json
// is the same on every run. Agents the tests start as processes have keys
// of their own.
func TestMain(m *testing.M) {
	state.SetFingerprintKey([]byte("peeragent plan golden"))
	os.Exit(m.Run())
}
