package vpp

import (
	"errors"
	"testing"

	"go.fd.io/govpp/api"
)

// TestRetvalError pins how govpp's error table is read, so a govpp
// upgrade that changes its text fails here instead of garbling messages.
func TestRetvalError(t *testing.T) {
	tests := []struct {
		name   string
		retval int32
		want   string
		is     error
	}{
		{"no-such-entry", -6, "VPP retval -6 (No such entry)", api.NO_SUCH_ENTRY},
		{"no-such-fib", -3, "VPP retval -3 (No such FIB / VRF)", api.NO_SUCH_FIB},
		{"unknown-retval", -99999, "VPP retval -99999 (unknown)", api.VPPApiError(-99999)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := retvalError(tt.retval)
			if got := err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

func TestAbsent(t *testing.T) {
	tests := []struct {
		name   string
		retval int32
		want   bool
	}{
		{"no-such-entry", -6, true},
		{"success-is-not-absence", 0, false},
		{"no-such-fib-is-a-failure", -3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := absent(tt.retval); got != tt.want {
				t.Errorf("absent(%d) = %v, want %v", tt.retval, got, tt.want)
			}
		})
	}
}
