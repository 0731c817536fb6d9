package probespec

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Spec is one VIP's probe as configured.
type Spec struct {
	// URL is where the request goes, http:// or https://, usually
	// APISIX's own listener on loopback: "http://127.0.0.1:9080/healthz".
	URL string `yaml:"url"`
	// Host, when set, is the request's Host header (and, for https with
	// no TLSServerName, the TLS server name), so that APISIX routes the
	// probe as it routes the VIP's traffic. Empty sends the URL's host.
	Host string `yaml:"host,omitempty"`
	// ExpectStatus lists the statuses that mean Up. [Defaults] has [200].
	ExpectStatus []int `yaml:"expect_status,flow"`
	// Timeout bounds this probe on top of the caller's deadline.
	Timeout time.Duration `yaml:"timeout"`
	// TLSServerName is the server name sent in the TLS handshake and
	// checked against the certificate (https only).
	TLSServerName string `yaml:"tls_server_name,omitempty"`
	// InsecureSkipVerify accepts any certificate (https only). A warning.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty"`
}

// Equal reports whether s and o are the same probe: a reload that keeps
// a VIP's probe Equal has nothing to redo for it.
func (s Spec) Equal(o Spec) bool {
	return s.URL == o.URL && s.Host == o.Host && slices.Equal(s.ExpectStatus, o.ExpectStatus) &&
		s.Timeout == o.Timeout && s.TLSServerName == o.TLSServerName && s.InsecureSkipVerify == o.InsecureSkipVerify
}

// String is the probe for logs and /status: "GET URL (host HOST)", the
// URL's user info masked.
func (s Spec) String() string {
	return "GET " + Mask(s.URL) + hostNote(s.Host)
}

// DefaultTimeout is the timeout of a probe that sets none.
const DefaultTimeout = 2 * time.Second

// Keys are the keys of a probe mapping, in the order the docs list them.
// Any other key is the configuration parser's error to report.
var Keys = []string{"url", "host", "expect_status", "timeout", "tls_server_name", "insecure_skip_verify"}

// Defaults returns the spec a probe mapping starts from: the parser
// overwrites the fields of the keys the file sets, then calls Validate.
// (So a written `timeout: 0s` or `expect_status: []` is refused, never
// silently replaced by a default.)
func Defaults() Spec {
	return Spec{ExpectStatus: []int{200}, Timeout: DefaultTimeout}
}

// FieldError is one problem with a probe spec, or one warning.
type FieldError struct {
	// Key is the probe key concerned ("url", "expect_status", …), so that
	// the parser can find its line.
	Key string
	// Index is the position in expect_status, or -1.
	Index int
	// Value is the value as written; a URL's user info is masked.
	Value   string
	Msg     string // lower-case, without the value
	Allowed string // what would be accepted; may be empty
}

// Path is the key path under the probe mapping: "url", "expect_status[1]".
func (e FieldError) Path() string {
	if e.Index < 0 {
		return e.Key
	}
	return e.Key + "[" + strconv.Itoa(e.Index) + "]"
}

// Error renders `PATH: MSG (got "VALUE"; allowed: …)`, leaving out the
// parts that are empty, as the configuration's messages do.
func (e FieldError) Error() string {
	var extra []string
	if e.Value != "" {
		extra = append(extra, "got "+strconv.Quote(e.Value))
	}
	if e.Allowed != "" {
		extra = append(extra, "allowed: "+e.Allowed)
	}
	s := e.Path() + ": " + e.Msg
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, "; ") + ")"
	}
	return s
}

func fieldErr(key, value, msg, allowed string) FieldError {
	return FieldError{Key: key, Index: -1, Value: value, Msg: msg, Allowed: allowed}
}

// Validate reports every problem with s, in key order; nil when s is
// usable. It does no I/O: a name in the URL is not resolved.
func Validate(s Spec) []FieldError {
	var errs []FieldError
	https := false
	if e, isHTTPS, ok := checkURL(s.URL); !ok {
		errs = append(errs, e)
	} else {
		https = isHTTPS
	}
	if s.Host != "" && !validHost(s.Host, true) {
		errs = append(errs, fieldErr("host", s.Host, "not a host name or address, with an optional port", "e.g. api.example.com"))
	}
	errs = append(errs, checkStatuses(s.ExpectStatus)...)
	if s.Timeout <= 0 {
		errs = append(errs, fieldErr("timeout", s.Timeout.String(), "must be positive", "e.g. 1s"))
	}
	if s.TLSServerName != "" {
		if !validHost(s.TLSServerName, false) {
			errs = append(errs, fieldErr("tls_server_name", s.TLSServerName, "not a host name", "e.g. api.example.com"))
		} else if !https && s.URL != "" {
			errs = append(errs, fieldErr("tls_server_name", s.TLSServerName, "only for an https url", ""))
		}
	}
	if s.InsecureSkipVerify && !https && s.URL != "" {
		errs = append(errs, fieldErr("insecure_skip_verify", "true", "only for an https url", ""))
	}
	return errs
}

// Warnings lists what is valid in s but probably not meant; check-config
// prints them and `rhi run` logs them. They never stop rhi.
func Warnings(s Spec) []FieldError {
	if !s.InsecureSkipVerify {
		return nil
	}
	return []FieldError{fieldErr("insecure_skip_verify", "true",
		"the certificate is not checked: an expired or wrong certificate still counts as up, though clients would refuse it", "")}
}

// checkURL checks the url key; isHTTPS is meaningful when ok.
func checkURL(raw string) (e FieldError, isHTTPS, ok bool) {
	const allowed = "http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz"
	shown := Mask(raw)
	if raw == "" {
		return fieldErr("url", "", "missing", allowed), false, false
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// err repeats the URL unmasked: say it in our own words.
		return fieldErr("url", shown, "not a URL", allowed), false, false
	case u.User != nil:
		return fieldErr("url", shown, "must not have user info (sent in clear to every hop; rhi has no place for secrets)", allowed), false, false
	case u.Scheme != "http" && u.Scheme != "https":
		return fieldErr("url", shown, "scheme must be http or https", allowed), false, false
	case u.Hostname() == "":
		return fieldErr("url", shown, "no host", allowed), false, false
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fieldErr("url", shown, "must not have a fragment (it is never sent)", allowed), false, false
	case u.Port() != "" && !validPort(u.Port()):
		return fieldErr("url", shown, "bad port", "1-65535"), false, false
	}
	return FieldError{}, u.Scheme == "https", true
}

// checkStatuses checks expect_status: not empty, each a status code, no
// repeats.
func checkStatuses(codes []int) []FieldError {
	if len(codes) == 0 {
		return []FieldError{fieldErr("expect_status", "", "empty: leave the key out for the default [200]", "HTTP status codes 100-599")}
	}
	var errs []FieldError
	for i, c := range codes {
		e := FieldError{Key: "expect_status", Index: i, Value: strconv.Itoa(c)}
		switch {
		case c < 100 || c > 599:
			e.Msg, e.Allowed = "not an HTTP status", "100-599"
		case slices.Index(codes, c) < i:
			e.Msg = fmt.Sprintf("repeated, first at expect_status[%d]", slices.Index(codes, c))
		default:
			continue
		}
		errs = append(errs, e)
	}
	return errs
}

// validHost accepts a DNS name or an IP address (IPv6 in brackets when a
// port may follow), with a port when withPort.
func validHost(h string, withPort bool) bool {
	if withPort {
		if host, port, err := net.SplitHostPort(h); err == nil {
			return validPort(port) && validName(host, true)
		}
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			return validName(h[1:len(h)-1], true)
		}
	}
	return validName(h, false)
}

// validName accepts a DNS name or an IP address; an IPv6 address only
// when v6 (inside brackets, or after SplitHostPort removed them).
func validName(s string, v6 bool) bool {
	if ip := net.ParseIP(s); ip != nil {
		return ip.To4() != nil || v6
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}

// Mask returns raw with the user info of its authority, if any, replaced
// by "xxxxx", whether or not raw parses: a password in a refused URL must
// not reach a log or a terminal.
func Mask(raw string) string {
	start := strings.Index(raw, "://")
	if start < 0 {
		start = 0
	} else {
		start += 3
	}
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(raw[start:end], "@")
	if at < 0 {
		return raw
	}
	return raw[:start] + "xxxxx" + raw[start+at:]
}

func hostNote(host string) string {
	if host == "" {
		return ""
	}
	return " (host " + host + ")"
}
