// Package kube runs a real Kubernetes API server for tests: etcd and
// kube-apiserver, started as processes on 127.0.0.1 with free ports in a
// t.TempDir(), with generated certificates, the RBAC authorizer and
// ServiceAccount token signing on.
//
// The binaries come from $KUBEBUILDER_ASSETS (a directory holding
// kube-apiserver and etcd, as controller-runtime's envtest uses) or else from
// the cache directory that tools/apiserver/build.sh (make apiserver) fills:
//
//	${PEERAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peeragent}/apiserver-<K8sVersion>-etcd-<EtcdVersion>/
//
// Without them a test that calls Start (or Require) is skipped loudly, and
// fails under CI=true.
//
//	c := kube.Start(t)                  // admin: c.RESTConfig()
//	c.InstallCRDs(t, "../../deploy/crds")   // every CRD in the directory, Established
//	sa := c.ConfigFor("calico-system", "peeragent") // a TokenRequest token
//	c.Restart()                             // kube-apiserver only; etcd keeps the data
//
// Every process is stopped by a t.Cleanup (and killed with the test binary,
// on Linux), and when the test failed the tail of each log is printed.
package kube
