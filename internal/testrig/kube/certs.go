package kube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is what the cluster's TLS and token signing use, PEM-encoded, and the
// files kube-apiserver reads them from.
type pki struct {
	caCert, adminCert, adminKey []byte

	caFile, serverCertFile, serverKeyFile, saKeyFile, saPubFile string
}

// newPKI makes one CA that signs both the serving certificate (127.0.0.1,
// localhost) and the admin client certificate (O=system:masters), and an
// ECDSA ServiceAccount signing key pair, all written into dir.
func newPKI(dir string) (*pki, error) {
	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := template("kubetest-ca", nil)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &pki{caCert: pemBlock("CERTIFICATE", caDER)}
	server := template("kube-apiserver", nil)
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	server.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	server.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	serverCert, serverKey, err := issue(server, ca, caKey)
	if err != nil {
		return nil, err
	}
	admin := template("kubetest-admin", []string{"system:masters"})
	admin.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if p.adminCert, p.adminKey, err = issue(admin, ca, caKey); err != nil {
		return nil, err
	}
	saPriv, saPub, err := serviceAccountKeys()
	if err != nil {
		return nil, err
	}
	return p, p.write(dir, serverCert, serverKey, saPriv, saPub)
}

func (p *pki) write(dir string, serverCert, serverKey, saPriv, saPub []byte) error {
	p.caFile = filepath.Join(dir, "ca.crt")
	p.serverCertFile = filepath.Join(dir, "server.crt")
	p.serverKeyFile = filepath.Join(dir, "server.key")
	p.saKeyFile = filepath.Join(dir, "sa.key")
	p.saPubFile = filepath.Join(dir, "sa.pub")
	files := map[string][]byte{
		p.caFile: p.caCert, p.serverCertFile: serverCert, p.serverKeyFile: serverKey,
		p.saKeyFile: saPriv, p.saPubFile: saPub,
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func template(cn string, orgs []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// issue signs tmpl with the CA and returns the certificate and a new key.
func issue(tmpl, ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign %s: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err = privatePEM(key)
	return pemBlock("CERTIFICATE", der), keyPEM, err
}

func serviceAccountKeys() (priv, pub []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	priv, err = privatePEM(key)
	return priv, pemBlock("PUBLIC KEY", der), err
}

func privatePEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
