package state

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that reads and writes Kubernetes' text form
// ("120s", "2m").
type Duration struct{ time.Duration }

// MarshalJSON writes the Go duration text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON reads the Go duration text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	d.Duration = v
	return nil
}
