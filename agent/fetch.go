package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Fetch is the client side of Handler: it GETs path (/state, /routes,
// /neighbors/ADDRESS, /actions) from the agent serving HTTP at addr and
// decodes the JSON it answers into v (the status command, tests); client
// nil is http.DefaultClient. An answer other than 200 is a *StatusError.
func Fetch(ctx context.Context, client *http.Client, addr, path string, v any) error {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("read %s from %s: %w", path, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Addr: addr, Path: path, Code: resp.StatusCode, Status: resp.Status}
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("read %s from %s: %w", path, addr, err)
	}
	return nil
}

// StatusError is an answer of Fetch other than 200 OK.
type StatusError struct {
	Addr, Path string
	Code       int    // http.StatusNotFound...
	Status     string // "404 Not Found"
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("read %s from %s: %s", e.Path, e.Addr, e.Status)
}
