package main

import (
	"flag"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig finds the cluster as kubectl does: --kubeconfig, else
// $KUBECONFIG (a list of files), else ~/.kube/config, with --context or
// the current context; with no kubeconfig at all (a pod), the in-cluster
// config.
func restConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err == nil {
		return cfg, nil
	}
	if kubeconfig != "" || context != "" || !clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, ierr := rest.InClusterConfig()
	if ierr != nil {
		return nil, fmt.Errorf("no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and no in-cluster config: %w", ierr)
	}
	return cfg, nil
}

// clusterFlags adds to fs the flags of plan and rbac that find the cluster
// and its Calico objects: --kubeconfig, --context, --calico-api-group.
func (f *runFlags) clusterFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster config)")
	fs.StringVar(&f.kubeContext, "context", "", "kubeconfig context (default: the current context)")
	fs.StringVar(&f.group, "calico-api-group", "crd.projectcalico.org/v1", "API group of the Calico objects: crd.projectcalico.org/v1, projectcalico.org/v3 or auto")
}
