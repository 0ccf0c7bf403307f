package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/peeragent/peeragent/state"
)

// statusDump is the part of an agent's /state the tests read. Passwords
// stay the fingerprint strings the agent served (decoding them as
// state.Password would fingerprint the fingerprint).
type statusDump struct {
	Node      string `json:"node"`
	Neighbors []struct {
		Address  string `json:"address"`
		Password string `json:"password"`
	} `json:"neighbors"`
	Sessions []*state.Session    `json:"sessions"`
	Problems []state.Problem     `json:"problems"`
	Routing  state.Routing       `json:"routing"`
	Routes   []*state.TableRoute `json:"routes"`
}

// fetchState reads a running agent's /state.
func fetchState(ctx context.Context, addr string) (statusDump, error) {
	var d statusDump
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/state", nil)
	if err != nil {
		return d, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return d, fmt.Errorf("read state from %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("read state from %s: %s", addr, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return d, fmt.Errorf("read state from %s: %w", addr, err)
	}
	return d, nil
}
