package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestDataplaneFlag: --dataplane chooses the executor (docs/routes.md
// §9.7); without it, --vpp-socket decides as before.
func TestDataplaneFlag(t *testing.T) {
	tests := []struct {
		name, dataplane, socket string
		want, wantErr           string
	}{
		{name: "default-without-socket-is-none", want: "none"},
		{name: "none", dataplane: "none", want: "none"},
		{name: "linux", dataplane: "linux", want: "linux"},
		{name: "vpp-needs-a-socket", dataplane: "vpp", wantErr: "--dataplane vpp needs --vpp-socket"},
		{name: "unknown", dataplane: "ebpf", wantErr: `--dataplane "ebpf": want vpp, linux or none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec, dp, err := newDataplane(&runFlags{dataplane: tt.dataplane, vppSocket: tt.socket}, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "none"
			if dp != nil {
				got = dp.Name()
			}
			if got != tt.want || exec == nil {
				t.Errorf("dataplane %q (executor %T), want %q", got, exec, tt.want)
			}
		})
	}
	_, err := parseRunFlags([]string{"--node", "n", "--dataplane", "ebpf"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--dataplane") {
		t.Errorf("parseRunFlags with --dataplane ebpf: %v, want a flag error", err)
	}
}
