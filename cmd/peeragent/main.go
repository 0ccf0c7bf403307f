// Command peeragent is the BGP node agent of a Calico cluster whose
// dataplane is VPP. See `peeragent --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/peeragent/peeragent/agent"
	"github.com/peeragent/peeragent/state"
)

const usage = `peeragent: the BGP peer manager of a Calico/VPP node.

Usage:
  peeragent run    [flags]   run the agent (--from DIR, or the cluster)
  peeragent plan   (--from DIR | --kubeconfig FILE) --node NAME [-o text|json] [--fail-on-problems]
                             print what a fresh agent would configure, and why
  peeragent status [--addr HOST:PORT] [-o text|json] [ADDRESS]
                             print a running agent's neighbors and problems,
                             or one neighbor in detail
  peeragent routes [--addr HOST:PORT] [-o text|json]
                             print a running agent's route table: next hops,
                             learned from which neighbors, phase, why not installed
  peeragent version [-o text|json]
                             print the version, VCS revision and Go version
  peeragent rbac   [--from DIR | --kubeconfig FILE] [--secrets-namespace NS]
                             print the Role (and RoleBinding) that lets the agent
                             read exactly the Secrets the BGPPeers and
                             BGPConfigurations reference: | kubectl apply -f -
  peeragent sysctl NAME=MIN...
                             raise kernel settings to at least MIN, never lower
                             them (the DaemonSet's init container)

Run "peeragent COMMAND --help" for the flags of a command. Every flag is also
read from $PEERAGENT_<FLAG> (--metrics-addr: $PEERAGENT_METRICS_ADDR); the
command line wins.

HTTP endpoints of "peeragent run" (--http-addr, default 127.0.0.1:9179):
` + agent.Endpoints + "\n"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs a command and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = runCmd(ctx, args[1:], stderr)
	case "plan":
		err = planCmd(args[1:], stdout, stderr)
	case "status":
		err = statusCmd(args[1:], stdout, stderr)
	case "rbac":
		err = rbacCmd(args[1:], stdout, stderr)
	case "sysctl":
		err = sysctlCmd(args[1:], stdout, stderr)
	case "routes":
		err = routesCmd(args[1:], stdout, stderr)
	case "version", "--version":
		err = versionCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "peeragent: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "peeragent %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// maxMaxPaths bounds --max-paths.
const maxMaxPaths = 256

// optionFlags declares the flags that shape derivation (shared by run and plan).
func optionFlags(fs *flag.FlagSet) func() state.Options {
	ns := os.Getenv("NAMESPACE")
	if ns == "" {
		ns = state.DefaultNamespace
	}
	namespace := fs.String("secrets-namespace", ns, "namespace of the BGP password Secrets (env NAMESPACE)")
	exact := fs.Bool("ttl-exact-hop", false, "use BIRD's ttlMin of 256-n for ttlSecurity n, instead of 255-n (one extra hop for the VPP host tap)")
	var families stringList
	fs.Var(&families, "extra-family", "enable an extra address family beside unicast (repeatable), e.g. ipv4-srpolicy, l3vpn-ipv4-unicast")
	maxPaths, settle := state.DefaultMaxPaths, state.DefaultRouteSettleMax
	fs.Func("max-paths", fmt.Sprintf("most next hops of an ECMP route, 1 to %d (default %d; docs/routes.md §9.4)", maxMaxPaths, maxPaths), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMaxPaths {
			return fmt.Errorf("want 1 to %d", maxMaxPaths)
		}
		maxPaths = n
		return nil
	})
	maxPrefixes := uint32(state.DefaultMaxPrefixes)
	fs.Func("max-prefixes", fmt.Sprintf("most routes each neighbor may send per address family; one more and the session is held down with a problem (default %d; a BGPPeer's annotation peeragent.io/max-prefixes overrides it for its neighbors; docs/routes.md §9.9)", maxPrefixes), func(v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 {
			return fmt.Errorf("want a positive number of routes")
		}
		maxPrefixes = uint32(n)
		return nil
	})
	fs.Func("route-settle-max", fmt.Sprintf("longest wait after a speaker start before routes held from an earlier run are swept (default %s; docs/routes.md §9.6)", settle), func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 240s")
		}
		settle = d
		return nil
	})
	return func() state.Options {
		return state.Options{Namespace: *namespace, TTLExactHop: *exact, ExtraFamilies: families,
			MaxPaths: maxPaths, RouteSettleMax: state.Duration{Duration: settle}, MaxPrefixes: maxPrefixes}
	}
}

type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
