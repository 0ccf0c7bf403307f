package vpp

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib"
)

// TestAttachRegistersSource: the executor finds its FIB source by name (a
// previous run's) or adds it, weaker than API (docs/routes.md §9.7).
func TestAttachRegistersSource(t *testing.T) {
	api80 := &fib.FibSourceDetails{Src: fib.FibSource{Priority: 0x80, ID: 8, Name: "API"}}
	tests := []struct {
		name    string
		details []api.Message
		want    []api.Message
		wantID  uint8
	}{{
		name:    "adds-when-absent",
		details: []api.Message{api80},
		want: []api.Message{&fib.FibSourceDump{},
			&fib.FibSourceAdd{Src: fib.FibSource{Priority: 0x82, ID: 0, Name: "peeragent"}}},
		wantID: 25, // fakeVPP's answer to fib_source_add
	}, {
		name:    "finds-a-previous-runs-source",
		details: []api.Message{api80, &fib.FibSourceDetails{Src: fib.FibSource{Priority: 0x82, ID: 31, Name: "peeragent"}}},
		want:    []api.Message{&fib.FibSourceDump{}},
		wantID:  31,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeVPP(t)
			f.queueDump(tt.details...)
			exec, err := Attach(context.Background(), f.conn, nil)
			if err != nil {
				t.Fatalf("Attach: %v", err)
			}
			if diff := cmp.Diff(tt.want, f.requestsSent()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if got := uint8(exec.source.Load()); got != tt.wantID {
				t.Errorf("source id %d, want %d", got, tt.wantID)
			}
		})
	}
}
