package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsNode is a loopback https node whose certificate is self-signed for ip and valid
// from notBefore to notAfter; caFile holds that certificate, for --ca-cert.
func tlsNode(t *testing.T, ip string, notBefore, notAfter time.Time) (url, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "narad test"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IPAddresses:           []net.IP{net.ParseIP(ip)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"topics":[]}`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	// The client's failed handshakes would be logged by the server otherwise.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, caFile
}

// A node whose certificate fails verification was reached: the hint says what to do
// about the certificate (--ca-cert for an authority not trusted here, the name it is
// for, its dates), not "cannot reach ... check --server", which sent the user looking
// at the address.
func TestTLSCertificateFailureHints(t *testing.T) {
	now := time.Now()
	good, goodCA := tlsNode(t, "127.0.0.1", now.Add(-time.Hour), now.Add(time.Hour))
	other, otherCA := tlsNode(t, "127.0.0.2", now.Add(-time.Hour), now.Add(time.Hour))
	expired, expiredCA := tlsNode(t, "127.0.0.1", now.Add(-2*time.Hour), now.Add(-time.Hour))
	// The one that listens on 127.0.0.1 but has a certificate for 127.0.0.2.
	other = strings.Replace(other, "127.0.0.2", "127.0.0.1", 1)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"authority not trusted", []string{"-s", good, "topic", "ls"},
			`certificate signed by unknown authority (the node's certificate is signed by an authority this machine does not trust; pass --ca-cert FILE with that authority's certificate)`},
		{"not for this name", []string{"-s", other, "--ca-cert", otherCA, "topic", "ls"},
			`certificate is valid for 127.0.0.2, not 127.0.0.1 (the node's certificate is not for 127.0.0.1; give --server a name it is for)`},
		{"expired", []string{"-s", expired, "--ca-cert", expiredCA, "topic", "ls"},
			`(the node's certificate has expired or is not valid yet; the node needs a valid one)`},
		{"sub", []string{"-s", good, "sub", "t"},
			`(the node's certificate is signed by an authority this machine does not trust; pass --ca-cert FILE with that authority's certificate)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, false, tt.args...)
			if r.code != ExitFailed || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "cannot reach") ||
				strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one line with %q", r.code, r.stderr, tt.want)
			}
		})
	}
	// The CA given, the same node answers.
	if r := runCLI(t, nil, false, "-s", good, "--ca-cert", goodCA, "topic", "ls"); r.code != 0 {
		t.Errorf("with its CA: exit %d, stderr %q", r.code, r.stderr)
	}
}
