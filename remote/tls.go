package remote

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CertificateError says in one line what is wrong with the certificate a
// server of name presented, when err is a failure to verify it (an
// authority this machine does not trust, a host name it does not cover, a
// time it is not valid at), marked Permanent: trying again cannot fix it.
// For other errors, other TLS handshake failures among them, it returns
// nil. An unknown authority's line names SSL_CERT_FILE, through which Go's
// TLS (and so npzfs) trusts a private CA.
func CertificateError(name string, err error) error {
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		noRoots x509.SystemRootsError
		why     string
	)
	switch {
	case errors.As(err, &unknown):
		why = "is issued by an authority this machine does not trust"
		if c := unknown.Cert; c != nil {
			why = "is issued by " + issuer(c)
		}
		why += ": to trust a private CA, set SSL_CERT_FILE to its certificate (a PEM file)"
	case errors.As(err, &host):
		why = "does not cover the host " + host.Host
		if c := host.Certificate; c != nil {
			why = fmt.Sprintf("is for %s, not %s: connect by a name it covers", certNames(c), host.Host)
		}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired && invalid.Cert != nil:
		why = validity(invalid.Cert, time.Now())
	case errors.As(err, &invalid):
		why = "is not valid: " + strings.TrimPrefix(invalid.Error(), "x509: ")
	case errors.As(err, &noRoots):
		why = "cannot be checked: this machine trusts no authority (install ca-certificates, or set SSL_CERT_FILE to a PEM file of authorities)"
	default:
		return nil
	}
	return Permanent(fmt.Errorf("%s: the server's TLS certificate %s", name, why))
}

// issuer names the issuer of a certificate this machine does not trust:
// itself, or an authority by its common name (else its whole name).
func issuer(c *x509.Certificate) string {
	if c.Issuer.String() == c.Subject.String() {
		return "itself (it is self-signed), which this machine does not trust"
	}
	n := c.Issuer.CommonName
	if n == "" {
		n = c.Issuer.String()
	}
	return fmt.Sprintf("%q, an authority this machine does not trust", n)
}

// certNames lists the host names and addresses a certificate covers.
func certNames(c *x509.Certificate) string {
	names := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		names = append(names, c.Subject.CommonName)
	}
	if len(names) == 0 {
		return "no host name"
	}
	return strings.Join(names, ", ")
}

// validity says when a certificate that is not valid now was, or will
// be.
func validity(c *x509.Certificate, now time.Time) string {
	const day = "2006-01-02 15:04:05 MST"
	if now.Before(c.NotBefore) {
		return fmt.Sprintf("is not valid until %s (this machine's clock says %s)", c.NotBefore.UTC().Format(day), now.UTC().Format(day))
	}
	return fmt.Sprintf("expired on %s (this machine's clock says %s)", c.NotAfter.UTC().Format(day), now.UTC().Format(day))
}
