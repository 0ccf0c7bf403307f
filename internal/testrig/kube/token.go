package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenLifetime is how long a ServiceAccount token from ConfigFor lasts.
const tokenLifetime = 24 * time.Hour

// ConfigFor is a client configuration that authenticates as the
// ServiceAccount saNamespace/saName, which must exist, with a token from
// the TokenRequest API (valid 24 h; it survives Restart). What it may do is
// up to the RBAC objects the test creates: with none, every request is
// refused with 403. A failure fails the test that started the cluster.
func (c *Cluster) ConfigFor(saNamespace, saName string) *rest.Config {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := c.TokenConfig(ctx, saNamespace, saName)
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	return cfg
}

// TokenConfig is ConfigFor returning its error instead of failing the test.
func (c *Cluster) TokenConfig(ctx context.Context, saNamespace, saName string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	secs := int64(tokenLifetime / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}
	tok, err := cs.CoreV1().ServiceAccounts(saNamespace).CreateToken(ctx, saName, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", saNamespace, saName, err)
	}
	return &rest.Config{
		Host:            c.host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caCert},
		BearerToken:     tok.Status.Token,
		QPS:             1000, Burst: 2000,
	}, nil
}

// WriteKubeconfig writes cfg (from RESTConfig or ConfigFor) as a kubeconfig
// file in the cluster's directory and returns its path, for a program under
// test that takes --kubeconfig. name makes the file name unique.
func (c *Cluster) WriteKubeconfig(name string, cfg *rest.Config) (string, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: name}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, "kubeconfig-"+name)
	return path, os.WriteFile(path, data, 0o600)
}
