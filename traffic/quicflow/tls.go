package quicflow

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// ALPN is the application protocol both ends of a flow negotiate
// (RFC 7301); QUIC requires one (RFC 9001 §8.1).
const ALPN = "wanlab-bulk"

// serverName is the name in the flow's certificate, which the client asks
// for and verifies.
const serverName = "quic.wanlab.invalid"

// tlsConfigs makes a self-signed certificate for one flow and returns the
// server's TLS configuration, which presents it, and the client's, which
// trusts that certificate alone. The key never leaves the process.
func tlsConfigs(now time.Time) (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("quicflow: certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, nil, fmt.Errorf("quicflow: certificate serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: serverName},
		DNSNames:     []string{serverName},
		// A day either side of now leaves room for a wall clock that
		// steps during a run.
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("quicflow: certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("quicflow: certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	server = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		NextProtos:   []string{ALPN},
		MinVersion:   tls.VersionTLS13,
	}
	client = &tls.Config{
		RootCAs:    roots,
		ServerName: serverName,
		NextProtos: []string{ALPN},
		MinVersion: tls.VersionTLS13,
	}
	return server, client, nil
}
