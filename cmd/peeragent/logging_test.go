package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/peeragent/peeragent/reducer"
	"github.com/peeragent/peeragent/state"
)

func TestNewLoggerFormats(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := newLogger("info", "json", &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["msg"] != "hello" {
		t.Errorf("json line %q: %v", buf.String(), err)
	}
	if _, _, err := newLogger("info", "xml", io.Discard); err == nil {
		t.Error("--log-format xml accepted")
	}
}

// TestLogLevelFollowsBGPConfiguration drives the follower with States
// from the real reducer: default's logSeverityScreen, then this node's,
// then both gone (the flag's level again).
func TestLogLevelFollowsBGPConfiguration(t *testing.T) {
	var buf bytes.Buffer
	log, level, err := newLogger("info", "text", &buf)
	if err != nil {
		t.Fatal(err)
	}
	var gobgp []slog.Level
	f := newLevelFollower(slog.LevelInfo, level, func(l slog.Level) { gobgp = append(gobgp, l) }, log)
	s := state.New("n", state.Options{})
	steps := []struct {
		a         state.Action
		want, bgp slog.Level
	}{
		{state.ConfigUpserted{Config: state.BGPConfiguration{Name: "default", LogSeverityScreen: "Debug"}}, slog.LevelDebug, slog.LevelDebug},
		{state.ConfigUpserted{Config: state.BGPConfiguration{Name: "node.n", LogSeverityScreen: "Error"}}, slog.LevelError, slog.LevelError},
		{state.ConfigUpserted{Config: state.BGPConfiguration{Name: "node.other", LogSeverityScreen: "Debug"}}, slog.LevelError, slog.LevelError},
		{state.ConfigDeleted{Name: "node.n"}, slog.LevelDebug, slog.LevelDebug},
		{state.ConfigUpserted{Config: state.BGPConfiguration{Name: "default", LogSeverityScreen: "Fatal"}}, state.LevelFatal, state.LevelFatal},
		{state.ConfigDeleted{Name: "default"}, slog.LevelInfo, slog.LevelWarn},
	}
	for i, st := range steps {
		s = reducer.Reduce(s, st.a)
		f.observe(s)
		if got := level.Level(); got != st.want {
			t.Errorf("step %d: level %v, want %v", i, got, st.want)
		}
		if len(gobgp) == 0 || gobgp[len(gobgp)-1] != st.bgp {
			t.Errorf("step %d: GoBGP level %v, want %v", i, gobgp, st.bgp)
		}
	}
	if len(gobgp) != 5 {
		t.Errorf("GoBGP level set %d times (%v), want 5: once per change", len(gobgp), gobgp)
	}
	if !strings.Contains(buf.String(), "from=\"BGPConfiguration logSeverityScreen\"") {
		t.Errorf("no log line for the change:\n%s", buf.String())
	}
}

func TestEnvironmentFlags(t *testing.T) {
	t.Setenv("PEERAGENT_NODE", "from-env")
	t.Setenv("PEERAGENT_METRICS_ADDR", "127.0.0.1:1")
	t.Setenv("PEERAGENT_BGP_LISTEN_ADDRESS", "127.0.0.1, ::1")
	t.Setenv("PEERAGENT_LOG_FORMAT", "json")
	f, err := parseRunFlags([]string{"--metrics-addr", "127.0.0.1:2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.node != "from-env" || f.metricsAddr != "127.0.0.1:2" || f.logFormat != "json" ||
		strings.Join(f.listen, " ") != "127.0.0.1 ::1" {
		t.Errorf("node %q metrics %q format %q listen %q", f.node, f.metricsAddr, f.logFormat, f.listen)
	}
	t.Setenv("PEERAGENT_JOURNAL_SIZE", "many")
	if _, err := parseRunFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "$PEERAGENT_JOURNAL_SIZE") {
		t.Errorf("bad env value: %v", err)
	}
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
- name: b
  cluster: {server: "https://127.0.0.2:6443"}
users:
- name: u
  user: {}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

func TestRESTConfigLoadingRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", path)
	cases := []struct{ kubeconfig, context, want string }{
		{"", "", "https://127.0.0.1:6443"},
		{"", "ctx-b", "https://127.0.0.2:6443"},
		{path, "ctx-b", "https://127.0.0.2:6443"},
	}
	for _, c := range cases {
		cfg, err := restConfig(c.kubeconfig, c.context)
		if err != nil || cfg.Host != c.want {
			t.Errorf("restConfig(%q, %q) = %v, %v; want host %s", c.kubeconfig, c.context, cfg, err, c.want)
		}
	}
	if _, err := restConfig("", "nope"); err == nil {
		t.Error("an unknown context was accepted")
	}
	// ~/.kube/config is clientcmd.RecommendedHomeFile, fixed when the
	// package loads: this machine's, if it has one.
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		t.Skip("this machine has a ~/.kube/config")
	}
	t.Setenv("KUBECONFIG", "")
	if _, err := restConfig("", ""); err == nil || !strings.Contains(err.Error(), "in-cluster") {
		t.Errorf("no config anywhere: %v", err)
	}
}
