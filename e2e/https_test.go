package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// writeCertificate writes a self-signed certificate for 127.0.0.1 and its
// key into dir and returns their paths.
func writeCertificate(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "eventstore e2e"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = harness.WriteFile(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = harness.WriteFile(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})))
	return certFile, keyFile
}

func TestHTTPS(t *testing.T) {
	certFile, keyFile := writeCertificate(t, t.TempDir())
	inst := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory-temporary",
		"--http-enabled", "--http-port=0", "--https-port=0",
		"--https-certificate-file="+certFile, "--https-private-key-file="+keyFile)
	if got := inst.Listeners(); len(got) != 2 || !strings.HasPrefix(got[0], "http://0.0.0.0:") || !strings.HasPrefix(got[1], "https://0.0.0.0:") {
		t.Fatalf("listeners %v", got)
	}

	secure := inst.DoURL("POST", inst.URL("https")+"/api/v1/verify-api-token", harness.Token, "")
	checkCommonHeaders(t, secure)
	if secure.StatusCode != 200 || secure.ProtoMajor != 2 || secure.TLS == nil || secure.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("HTTPS verify: %d over %s", secure.StatusCode, secure.Proto)
	}
	if hsts := secure.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(hsts, "max-age=") {
		t.Fatalf("no HSTS on HTTPS: %q", hsts)
	}
	checkError(t, inst.DoURL("GET", inst.URL("https")+"/api/v1/health", "", ""), 401, "unauthorized")

	plain := inst.Do("GET", "/api/v1/ping", "", "")
	if plain.StatusCode != 200 || plain.Header.Get("Strict-Transport-Security") != "" {
		t.Fatalf("plain HTTP: %d, HSTS %q", plain.StatusCode, plain.Header.Get("Strict-Transport-Security"))
	}

	conn, err := tls.Dial("tcp", strings.TrimPrefix(inst.URL("https"), "https://"), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11})
	if err == nil {
		conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
}

func TestHTTPSOnlyWithoutPlainHTTP(t *testing.T) {
	certFile, keyFile := writeCertificate(t, t.TempDir())
	inst := harness.Start(t, bin, "run", "--api-token="+harness.Token, "--data-directory-temporary", "--https-port=0",
		"--https-certificate-file="+certFile, "--https-private-key-file="+keyFile)
	if got := inst.Listeners(); len(got) != 1 || !strings.HasPrefix(got[0], "https://") {
		t.Fatalf("listeners %v", got)
	}
	if len(inst.Logs("plain HTTP enabled")) != 0 {
		t.Fatal("warned about plain HTTP although it is off")
	}
	if r := inst.DoURL("GET", inst.URL("https")+"/api/v1/ping", "", ""); r.StatusCode != 200 {
		t.Fatalf("HTTPS ping: %d", r.StatusCode)
	}
}

func TestInvalidCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, _ := writeCertificate(t, dir)
	notAKey := harness.WriteFile(t, dir, "garbage.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	code, stdout, stderr := harness.Run(t, bin, 10*time.Second, "run", "--api-token=x", "--data-directory-temporary",
		"--https-certificate-file="+certFile, "--https-private-key-file="+notAKey)
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "eventstore: --https-certificate-file/--https-private-key-file: ") {
		t.Fatalf("invalid key: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
