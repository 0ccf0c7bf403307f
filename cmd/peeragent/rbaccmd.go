package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/peeragent/peeragent/state"
)

// rbacPlaceholderNode stands for --node when none is given: which Secrets
// are referenced does not depend on the node (the Role is every node's),
// and the cluster source needs a name to filter its Pods and BlockAffinities.
const rbacPlaceholderNode = "peeragent-rbac"

// rbacCmd prints the Role (and its RoleBinding) that lets the agent read
// exactly the Secrets the BGPPeers and BGPConfigurations reference, every
// node's, in its secrets namespace: `peeragent rbac | kubectl apply -f -`.
// The agent lists and watches each Secret with the field selector
// metadata.name=NAME, which the API server authorizes against
// resourceNames; a Role with no name left grants nothing (never every
// Secret).
func rbacCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rbac", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &runFlags{}
	fs.StringVar(&f.from, "from", "", "manifest directory to read the BGPPeers and BGPConfigurations from; without it, the cluster (--kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster)")
	f.clusterFlags(fs)
	role := fs.String("role", "peeragent-secrets", "name of the Role and RoleBinding")
	sa := fs.String("service-account", "peeragent/peeragent", "the agent's ServiceAccount, NAMESPACE/NAME")
	timeout := fs.Duration("timeout", 30*time.Second, "with a cluster: how long to wait for its lists")
	f.opts = optionFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	saNS, saName, ok := strings.Cut(*sa, "/")
	if !ok || saNS == "" || saName == "" {
		return fmt.Errorf("--service-account %q: want NAMESPACE/NAME", *sa)
	}
	f.node = rbacPlaceholderNode
	var acts []state.Action
	if f.from != "" {
		acts = dirActions(f.from, f.node, f.opts())
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		var err error
		acts, err = listObjects(ctx, f, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return err
		}
	}
	ns := f.opts().Namespace
	names := referencedSecrets(reduceAll(state.New(f.node, f.opts()), acts))
	out, err := secretRBAC(ns, *role, saNS, saName, names)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// listObjects runs the cluster source until every kind has listed (no
// Secret is read) and returns what it dispatched, in order.
func listObjects(ctx context.Context, f *runFlags, log *slog.Logger) ([]state.Action, error) {
	return collectCluster(ctx, f, log, "every kind listed",
		func(source, []state.Action, map[string]bool) bool { return true })
}

// referencedSecrets lists, sorted, the Secret names that any BGPPeer
// (valid or not, whichever nodes it selects) or BGPConfiguration names.
func referencedSecrets(s state.State) []string {
	seen := map[string]bool{}
	add := func(r *state.SecretKeyRef) {
		if r != nil && r.Name != "" {
			seen[r.Name] = true
		}
	}
	s.Inputs.Peers.Range(func(_ string, e *state.PeerEntry) bool {
		add(e.Spec.Password)
		if e.Rejected != nil {
			add(e.Rejected.Password)
		}
		return true
	})
	for _, m := range []interface {
		Range(func(string, *state.BGPConfiguration) bool)
	}{s.Inputs.Configs, s.Inputs.RejectedConfigs} {
		m.Range(func(_ string, c *state.BGPConfiguration) bool {
			add(c.NodeMeshPassword)
			return true
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// secretRBAC is the Role and RoleBinding as YAML, ready for kubectl apply.
func secretRBAC(ns, role, saNS, saName string, names []string) ([]byte, error) {
	labels := map[string]any{"app.kubernetes.io/name": "peeragent"}
	meta := map[string]any{"name": role, "namespace": ns, "labels": labels}
	rules := []any{}
	if len(names) > 0 {
		rules = append(rules, map[string]any{"apiGroups": []string{""}, "resources": []string{"secrets"},
			"resourceNames": names, "verbs": []string{"get", "list", "watch"}})
	}
	r, err := yaml.Marshal(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": rules})
	if err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": saName, "namespace": saNS}}})
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# peeragent rbac: the agent may read the %d Secrets of namespace %s that BGPPeers and\n"+
		"# BGPConfigurations reference, and no other (kubectl apply -f - replaces the Role's list).\n", len(names), ns)
	if len(names) == 0 {
		head = fmt.Sprintf("# peeragent rbac: no BGPPeer or BGPConfiguration references a Secret: the Role grants nothing in %s.\n", ns)
	}
	return []byte(head + string(r) + "---\n" + string(b)), nil
}
