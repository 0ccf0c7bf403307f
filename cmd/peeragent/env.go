package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// envPrefix starts the environment variable of every flag: --metrics-addr
// is also PEERAGENT_METRICS_ADDR (for installs that set the agent up from
// a ConfigMap through envFrom). The command line wins.
const envPrefix = "PEERAGENT_"

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// applyEnv sets each flag that the command line left out from its
// environment variable, if set. A repeatable flag takes a comma-separated
// list. Call it after fs.Parse.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := os.LookupEnv(envName(f.Name))
		if given[f.Name] || !ok || err != nil {
			return
		}
		vals := []string{v}
		if _, list := f.Value.(*stringList); list {
			vals = strings.Split(v, ",")
		}
		for _, x := range vals {
			if e := fs.Set(f.Name, strings.TrimSpace(x)); e != nil {
				err = fmt.Errorf("$%s: %w", envName(f.Name), e)
				return
			}
		}
	})
	return err
}
