package main

import (
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
