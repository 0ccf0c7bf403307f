package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/peeragent/peeragent/effects"
	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

var update = flag.Bool("update", false, "rewrite the want-* sections of the golden files")

// TestMain fixes the password fingerprint key (random per process in the
// agent), so that the fingerprints in the golden files are the same on
// every run.
func TestMain(m *testing.M) {
	state.SetFingerprintKey([]byte("peeragent golden scenarios"))
	os.Exit(m.Run())
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		t.Run(name, func(t *testing.T) { runFile(t, f) })
	}
}

// TestNoUnrunScenario fails on a .txtar anywhere under testdata/ that TestGolden does not run
// (a nested copy, a misplaced file): a scenario no test runs only misleads its reader.
func TestNoUnrunScenario(t *testing.T) {
	run, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, f := range run {
		ran[filepath.Clean(f)] = true
	}
	err = filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".txtar") && !ran[filepath.Clean(path)] {
			t.Errorf("%s: a scenario TestGolden does not run (only testdata/*.txtar runs): move it there or delete it", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func runFile(t *testing.T, path string) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(ar.Comment)) == "" {
		t.Error("scenario has no comment saying what it proves")
	}
	initial, _ := section(ar, "initial.yaml")
	actions, ok := section(ar, "actions.yaml")
	if !ok {
		t.Fatal("no actions.yaml")
	}
	sc, err := Parse(initial, actions)
	if err != nil {
		t.Fatal(err)
	}
	gotEffects, gotState := play(t, sc)
	againEffects, againState := play(t, sc)
	if gotEffects != againEffects || gotState != againState {
		t.Error("a second run gave different output: the reducer is not deterministic")
	}
	checkNoSecrets(t, sc, gotEffects+gotState)
	if *update {
		write(t, path, ar, gotEffects, gotState)
		return
	}
	for _, w := range []struct{ name, got string }{{"want-effects.txt", gotEffects}, {"want-state.yaml", gotState}} {
		want, ok := section(ar, w.name)
		if !ok {
			t.Errorf("no %s section (run go test ./golden -update)", w.name)
			continue
		}
		if d := cmp.Diff(string(want), w.got); d != "" {
			t.Errorf("%s differs (-want +got):\n%s", w.name, d)
		}
	}
}

// play runs the scenario, checking after every step that Reduce left the
// previous State as it was, and that the settle check's shortcut (the
// count of what settling waits for the State carries, reducer/settle.go)
// gives what a count made afresh gives.
func play(t *testing.T, sc *Scenario) (string, string) {
	final, steps := sc.Run(func(before string, prev state.State, a state.Action) {
		if after := DumpYAML(prev); after != before {
			t.Errorf("Reduce(%s) modified its input state:\n%s", Describe(a), cmp.Diff(before, after))
		}
		if prev.Routing.Settle == nil {
			return
		}
		fresh := prev
		fresh.Routing.Settle = nil
		got, want := reducer.Reduce(prev, a), reducer.Reduce(fresh, a)
		if d := cmp.Diff(DumpYAML(want), DumpYAML(got)); d != "" {
			t.Errorf("Reduce(%s) with the settle count kept differs from one counted afresh:\n%s", Describe(a), d)
		}
		if g, w := fmt.Sprint(effects.Diff(prev, got)), fmt.Sprint(effects.Diff(prev, want)); g != w {
			t.Errorf("Reduce(%s) with the settle count kept: effects %s, counted afresh %s", Describe(a), g, w)
		}
	})
	return EffectsText(steps), StateYAML(final)
}

func checkNoSecrets(t *testing.T, sc *Scenario, out string) {
	for _, a := range append(append([]state.Action{}, sc.Setup...), sc.Actions...) {
		for _, pw := range passwords(a) {
			if len(pw) >= 3 && strings.Contains(out, pw) {
				t.Errorf("password text %q appears in the output", pw)
			}
		}
	}
}

func passwords(a state.Action) []string {
	var secs []state.Secret
	switch a := a.(type) {
	case state.SecretUpserted:
		secs = append(secs, a.Secret)
	case state.SourceSynced:
		secs = a.Secrets
	}
	var out []string
	for _, s := range secs {
		for _, v := range s.Data {
			out = append(out, v.Reveal())
		}
	}
	return out
}

func write(t *testing.T, path string, ar *txtar.Archive, effects, st string) {
	var files []txtar.File
	for _, f := range ar.Files {
		if !strings.HasPrefix(f.Name, "want-") {
			files = append(files, f)
		}
	}
	files = append(files, txtar.File{Name: "want-effects.txt", Data: []byte(effects)},
		txtar.File{Name: "want-state.yaml", Data: []byte(st)})
	ar.Files = files
	if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
}
