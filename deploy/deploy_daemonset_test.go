package deploy

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// runFlags returns the flags of `peeragent run`, read from the source of
// cmd/peeragent: the flags defined on the FlagSet named "run", including
// those defined by the functions it is passed to (optionFlags). Reading the
// source needs no build of the agent.
func runFlags(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(agentCommand, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	flags := map[string]bool{}
	visited := map[string]bool{}
	var collect func(fn *ast.FuncDecl, fsVar string)
	collect = func(fn *ast.FuncDecl, fsVar string) {
		if visited[fn.Name.Name+"/"+fsVar] {
			return
		}
		visited[fn.Name.Name+"/"+fsVar] = true
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr: // fs.StringVar(&v, "name", ...), fs.Int("name", ...)
				if x, ok := fun.X.(*ast.Ident); ok && x.Name == fsVar {
					i := 0
					if strings.HasSuffix(fun.Sel.Name, "Var") {
						i = 1
					}
					if i < len(call.Args) {
						if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if name, err := strconv.Unquote(lit.Value); err == nil {
								flags[name] = true
							}
						}
					}
				}
			case *ast.Ident: // helper(fs): follow into the helper
				callee := funcs[fun.Name]
				if callee == nil {
					break
				}
				params := paramNames(callee)
				for i, arg := range call.Args {
					if id, ok := arg.(*ast.Ident); ok && id.Name == fsVar && i < len(params) {
						collect(callee, params[i])
					}
				}
			}
			return true
		})
	}
	for _, fn := range funcs {
		if v := runFlagSetVar(fn); v != "" {
			collect(fn, v)
		}
	}
	// The parse must have found the flags this test relies on; if not,
	// cmd/peeragent changed shape and this function must follow it.
	for _, want := range []string{"node", "http-addr", "secrets-namespace"} {
		if !flags[want] {
			t.Fatalf("found no --%s among the run flags of %s (found %v): update runFlags", want, agentCommand, flags)
		}
	}
	return flags
}

// runFlagSetVar returns the variable that fn assigns flag.NewFlagSet("run", ...) to.
func runFlagSetVar(fn *ast.FuncDecl) string {
	var name string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return true
		}
		call, ok := as.Rhs[0].(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "NewFlagSet" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Value == `"run"` {
			if id, ok := as.Lhs[0].(*ast.Ident); ok {
				name = id.Name
			}
		}
		return true
	})
	return name
}

func paramNames(fn *ast.FuncDecl) []string {
	var names []string
	for _, f := range fn.Type.Params.List {
		if len(f.Names) == 0 {
			names = append(names, "_")
		}
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// versionedImage is the agent's image at a release version.
var versionedImage = regexp.MustCompile(`^ghcr\.io/peeragent/peeragent:v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// metricsPort is the --metrics-addr default (:9189), which the
// scrape annotations and the PodMonitor name.
const metricsPort = "9189"

func TestDaemonSet(t *testing.T) {
	ms := loadManifests(t)
	ds := only[*appsv1.DaemonSet](t, ms)
	pod := ds.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	flags := runFlags(t)
	// args maps the flags given to their values; argErrs are args that are
	// not --flag=value.
	args := map[string]string{}
	var argErrs []error
	for _, a := range c.Args[min(1, len(c.Args)):] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			argErrs = append(argErrs, fmt.Errorf("arg %q: want --flag=value", a))
			continue
		}
		args[name] = value
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	cases := []struct {
		name  string
		check func() error
	}{
		{"runs-peeragent-run", func() error {
			// /peeragent is where tools/image puts the binary.
			if !slices.Equal(c.Command, []string{"/peeragent"}) || len(c.Args) == 0 || c.Args[0] != "run" {
				return fmt.Errorf("command %q args %q, want /peeragent run ...", c.Command, c.Args)
			}
			return nil
		}},
		{"flags-exist-in-peeragent-run", func() error {
			errs := argErrs
			for name := range args {
				if !flags[name] {
					errs = append(errs, fmt.Errorf("--%s: peeragent run has no such flag", name))
				}
			}
			return errors.Join(errs...)
		}},
		{"flag-values", func() error {
			var errs []error
			for name, want := range map[string]string{
				"node":              "$(NODENAME)",
				"secrets-namespace": secretsNamespace,
				"http-addr":         "127.0.0.1:9179",
			} {
				if got := args[name]; got != want {
					errs = append(errs, fmt.Errorf("--%s=%q, want %q", name, got, want))
				}
			}
			return errors.Join(errs...)
		}},
		{"env-from-downward-api", func() error {
			var errs []error
			for name, path := range map[string]string{"NODENAME": "spec.nodeName"} {
				e := env[name]
				if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
					errs = append(errs, fmt.Errorf("env %s: %+v, want fieldRef %s", name, e, path))
				}
			}
			// NAMESPACE would be the default of --secrets-namespace: the
			// pod's namespace is not where the Secrets are.
			if _, ok := env["NAMESPACE"]; ok {
				errs = append(errs, errors.New("env NAMESPACE is set: the Secrets are not in the pod's namespace"))
			}
			for _, a := range c.Args {
				for _, m := range envRef.FindAllStringSubmatch(a, -1) {
					if _, ok := env[m[1]]; !ok {
						errs = append(errs, fmt.Errorf("arg %q refers to undefined env %s", a, m[1]))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"uses-the-service-account", func() error {
			if pod.ServiceAccountName != serviceAccount {
				return fmt.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, serviceAccount)
			}
			if pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken {
				return errors.New("the service account token is not mounted")
			}
			return nil
		}},
		{"host-network", func() error {
			if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
				return fmt.Errorf("hostNetwork %v dnsPolicy %q", pod.HostNetwork, pod.DNSPolicy)
			}
			return nil
		}},
		{"probes-on-loopback", func() error {
			var errs []error
			_, port, _ := strings.Cut(args["http-addr"], ":")
			for path, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil {
					errs = append(errs, fmt.Errorf("no httpGet probe on %s", path))
					continue
				}
				g := p.HTTPGet
				if g.Host != "127.0.0.1" || g.Path != path || g.Port.String() != port {
					errs = append(errs, fmt.Errorf("probe %s: host %q path %q port %s, want 127.0.0.1 %s %s", path, g.Host, g.Path, g.Port.String(), path, port))
				}
			}
			return errors.Join(errs...)
		}},
		{"resource-requests", func() error {
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				return fmt.Errorf("requests %v, want cpu and memory", c.Resources.Requests)
			}
			return nil
		}},
		{"minimal-security-context", func() error {
			sc := c.SecurityContext
			if sc == nil || sc.Capabilities == nil {
				return errors.New("no securityContext with capabilities")
			}
			var errs []error
			if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				errs = append(errs, fmt.Errorf("drops %v, want ALL", sc.Capabilities.Drop))
			}
			if !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
				errs = append(errs, fmt.Errorf("adds %v, want NET_BIND_SERVICE only", sc.Capabilities.Add))
			}
			if sc.Privileged != nil && *sc.Privileged {
				errs = append(errs, errors.New("privileged"))
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				errs = append(errs, errors.New("allowPrivilegeEscalation is not false"))
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				errs = append(errs, errors.New("root filesystem is writable"))
			}
			return errors.Join(errs...)
		}},
		{"raises-optmem-max", func() error {
			// docs/semantics.md §4: room for the TCP-MD5 keys, raised, never lowered.
			if len(pod.InitContainers) != 1 {
				return fmt.Errorf("%d init containers, want the one raising net.core.optmem_max", len(pod.InitContainers))
			}
			// The agent's own image (one image for an air-gapped cluster),
			// its sysctl subcommand, with a setting it accepts.
			ic := pod.InitContainers[0]
			if ic.Image != c.Image || !slices.Equal(ic.Command, []string{"/peeragent"}) ||
				!slices.Equal(ic.Args, []string{"sysctl", "net.core.optmem_max=4194304"}) {
				return fmt.Errorf("init container %s: image %q command %q args %q; want %q /peeragent sysctl net.core.optmem_max=4194304",
					ic.Name, ic.Image, ic.Command, ic.Args, c.Image)
			}
			if ic.SecurityContext == nil || ic.SecurityContext.Privileged == nil || !*ic.SecurityContext.Privileged {
				return fmt.Errorf("init container %s: %v; want privileged (it writes /proc/sys)", ic.Name, ic.SecurityContext)
			}
			return nil
		}},
		{"tolerates-every-taint", func() error {
			if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
				return tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == ""
			}) {
				return fmt.Errorf("tolerations %+v, want one with operator Exists and no key or effect", pod.Tolerations)
			}
			return nil
		}},
		{"versioned-image", func() error {
			// What make image VERSION=vX.Y.Z tags; never :latest.
			if !versionedImage.MatchString(c.Image) {
				return fmt.Errorf("image %q, want %s", c.Image, versionedImage)
			}
			return nil
		}},
		{"rollout-waits-for-ready-pods", func() error {
			if ds.Spec.MinReadySeconds <= 0 {
				return fmt.Errorf("minReadySeconds %d, want > 0", ds.Spec.MinReadySeconds)
			}
			return nil
		}},
		{"prometheus-scrape-annotations", func() error {
			ann := ds.Spec.Template.Annotations
			want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": metricsPort, "prometheus.io/path": "/metrics"}
			var errs []error
			for k, v := range want {
				if ann[k] != v {
					errs = append(errs, fmt.Errorf("pod annotation %s=%q, want %q", k, ann[k], v))
				}
			}
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.Name == "metrics" && strconv.Itoa(int(p.ContainerPort)) == metricsPort && p.Protocol == corev1.ProtocolTCP
			}) {
				errs = append(errs, fmt.Errorf("ports %+v: no TCP port metrics %s", c.Ports, metricsPort))
			}
			return errors.Join(errs...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPodMonitor: the optional PodMonitor scrapes the agent's pods on the
// DaemonSet's metrics port.
func TestPodMonitor(t *testing.T) {
	ms := loadManifests(t)
	ds := only[*appsv1.DaemonSet](t, ms)
	var pms []*podMonitor
	for _, m := range ms {
		if m.pm != nil {
			pms = append(pms, m.pm)
		}
	}
	if len(pms) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(pms))
	}
	pm := pms[0]
	for k, v := range pm.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("PodMonitor selects %s=%s, the pods have %v", k, v, ds.Spec.Template.Labels)
		}
	}
	if len(pm.Spec.Selector.MatchLabels) == 0 {
		t.Error("PodMonitor selects every pod")
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("endpoints %+v, want 1", pm.Spec.PodMetricsEndpoints)
	}
	e := pm.Spec.PodMetricsEndpoints[0]
	c := ds.Spec.Template.Spec.Containers[0]
	if e.Path != "/metrics" || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == e.Port && strconv.Itoa(int(p.ContainerPort)) == metricsPort
	}) {
		t.Errorf("PodMonitor endpoint %+v, want the container port named for %s, path /metrics", e, metricsPort)
	}
}
