package probe

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
)

// refused reports whether err is the server answering that it cannot
// serve, rather than not answering: a TLS handshake it refused (an alert)
// or that failed verification, or plain HTTP where TLS was expected. Such
// a data plane is reachable but broken; it must withdraw the VIP (Down)
// even where failure_policy keeps a VIP announced while its health cannot
// be read. Everything else (refused connection, reset, timeout, a
// handshake that timed out) is Unreachable.
//
// A malformed HTTP answer is not told apart by a typed error in net/http
// and counts as Unreachable.
func refused(err error) bool {
	// net/http turns the record header error of an HTTP answer on the TLS
	// port into its own sentinel.
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	// A TLS alert from the server arrives as a *net.OpError "remote
	// error" around an unexported type.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return true
	}
	var (
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		hostname x509.HostnameError
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &record) ||
		errors.As(err, &hostname) || errors.As(err, &unknown) || errors.As(err, &invalid)
}
