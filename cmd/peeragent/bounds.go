package main

import (
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

// maxJournal bounds --journal-size: the journal is allocated at start,
// and a few hundred bytes an entry times a mistyped size would take the
// node's memory (docs/semantics.md §7: never crash).
const maxJournal = 100_000

// dedupe drops repeated values, keeping the first of each: the same
// --bgp-listen-address twice would make the speaker bind it twice and
// fail forever.
func dedupe(vs []string) []string {
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ignoreHangup logs and ignores SIGHUP, which would otherwise end the
// agent (exit 129, no log): every input is reloaded as it changes, so
// there is nothing to reload on it. The returned func stops ignoring.
func ignoreHangup(log *slog.Logger) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				log.Info("SIGHUP ignored: inputs are reloaded as they change")
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
