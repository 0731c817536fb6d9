package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/internal/health"
)

// The checks below are pure functions from a value as written to its typed
// form. They know nothing of YAML or key paths; the parser adds those.

// issue is what a check found wrong with a value. The zero issue means the
// value is fine.
type issue struct {
	msg     string
	allowed string // optional hint: accepted values or the expected form
	shown   string // optional: what to quote instead of the value (a secret)
}

func (i issue) ok() bool { return i.msg == "" }

var (
	errEmpty = issue{msg: "empty value"}

	durationHint = "a duration such as 500ms, 3s or 1m, or whole seconds"
)

// maxSeconds is the longest bare-seconds duration a time.Duration holds.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// parseDuration reads a Go duration ("3s", "500ms", "1m") or a bare integer
// meaning seconds. Only positive durations are valid: every duration in the
// config is an interval or a deadline.
func parseDuration(s string) (time.Duration, issue) {
	if s == "" {
		return 0, issue{msg: "empty value", allowed: durationHint}
	}
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		// Checked before multiplying: a product past the int64 range
		// wraps, and a large negative count could come out positive.
		switch {
		case n <= 0:
			return 0, issue{msg: "must be positive"}
		case n > maxSeconds:
			return 0, issue{msg: "too long", allowed: fmt.Sprintf("at most %d seconds", maxSeconds)}
		}
		d = time.Duration(n) * time.Second
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, issue{msg: "not a duration", allowed: durationHint}
		}
	}
	if d <= 0 {
		return 0, issue{msg: "must be positive"}
	}
	return d, issue{}
}

// MinPollInterval is the shortest apisix_poll_interval. Each poll reads
// every upstream (or the list) from the control API, whose nginx workers
// carry APISIX's traffic; a nanosecond interval polls back to back.
const MinPollInterval = 100 * time.Millisecond

// parsePollInterval reads apisix_poll_interval: a duration of at least
// MinPollInterval.
func parsePollInterval(s string) (time.Duration, issue) {
	d, is := parseDuration(s)
	switch {
	case !is.ok():
		return 0, is
	case d < MinPollInterval:
		return 0, issue{msg: "too short", allowed: "at least " + MinPollInterval.String()}
	}
	return d, issue{}
}

// parseCount reads a whole number of at least 1 (poll counts, rise, fall).
func parseCount(s string) (int, issue) {
	if s == "" {
		return 0, errEmpty
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, issue{msg: "not a whole number"}
	}
	if n < 1 {
		return 0, issue{msg: "must be at least 1"}
	}
	return n, issue{}
}

// oneOf accepts exactly one of the allowed words; case matters.
func oneOf(s string, allowed ...string) issue {
	for _, a := range allowed {
		if s == a {
			return issue{}
		}
	}
	msg := "unknown value"
	if s == "" {
		msg = "empty value"
	}
	return issue{msg: msg, allowed: strings.Join(allowed, ", ")}
}

// checkURL accepts an http or https URL with a host and without query or
// fragment, since the client appends the control-API paths to it. Trailing
// slashes are dropped for the same reason.
func checkURL(s string) (string, issue) {
	if s == "" {
		return "", errEmpty
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", issue{msg: "not a URL"}
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", issue{msg: "unsupported scheme", allowed: "http, https"}
	case u.Host == "" || u.Hostname() == "":
		return "", issue{msg: "missing host"}
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#"):
		return "", issue{msg: "must not have a query or fragment"}
	case u.User != nil:
		// The control API takes no credentials in the URL (rhi -> APISIX
		// is loopback); and the message must not repeat a password.
		return "", issue{msg: "must not have user info", shown: u.Redacted()}
	}
	if p := u.Port(); p != "" {
		if !validPort(p) {
			return "", issue{msg: "port out of range", allowed: "1-65535"}
		}
	}
	return strings.TrimRight(s, "/"), issue{}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}

// checkIfname applies the kernel's dev_valid_name rule: 1–15 bytes (IFNAMSIZ
// is 16 with the NUL), not "." or "..", no '/', ':' or whitespace (the
// kernel's isspace also counts 0xA0). A NUL byte is refused too: the kernel
// would silently cut the name there.
func checkIfname(s string) issue {
	if s == "" {
		return errEmpty
	}
	bad := len(s) > 15 || s == "." || s == ".."
	for i := 0; i < len(s) && !bad; i++ {
		switch s[i] {
		case '/', ':', ' ', '\t', '\n', '\v', '\f', '\r', 0xA0, 0:
			bad = true
		}
	}
	if bad {
		return issue{msg: "not a Linux interface name", allowed: `1-15 bytes without "/", ":" or whitespace, not "." or ".."`}
	}
	return issue{}
}

// checkListen accepts "" (status server off) or host:port with a numeric
// port; the host may be empty (all addresses) or a name.
func checkListen(s string) issue {
	if s == "" {
		return issue{}
	}
	hint := `host:port such as 127.0.0.1:9711 or [::1]:9711, or "" to disable`
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return issue{msg: "not a host:port address", allowed: hint}
	}
	if !validPort(port) {
		return issue{msg: "port must be a number from 1 to 65535", allowed: hint}
	}
	return issue{}
}

// maxSocketPath is the longest path a unix socket address can hold
// (sun_path is 108 bytes with the NUL); longer paths fail only at connect
// time with an unhelpful error.
const maxSocketPath = 107

func checkSocket(s string) issue {
	switch {
	case s == "":
		return errEmpty
	case len(s) > maxSocketPath:
		return issue{msg: "longer than 107 bytes, the limit for a unix socket path"}
	}
	return issue{}
}

// checkControlSocket accepts "" (no control socket) or an absolute path
// short enough for a unix socket address: the daemon and the CLI must agree
// on it whatever their working directories.
func checkControlSocket(s string) issue {
	switch {
	case s == "":
		return issue{}
	case !strings.HasPrefix(s, "/"):
		return issue{msg: "not an absolute path", allowed: `an absolute path such as /run/rhi/rhi.sock, or "" to disable`}
	case strings.ContainsRune(s, 0):
		return issue{msg: "contains a NUL byte"}
	}
	return checkSocket(s)
}

// symbolRE is a BIRD symbol: what a protocol name can be. BIRD caps
// symbols at 64 characters (SYM_MAX_LEN) and is case-sensitive.
var symbolRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func checkProtocol(s string) issue {
	if s == "" {
		return errEmpty
	}
	if !symbolRE.MatchString(s) {
		return issue{msg: "not a BIRD protocol name", allowed: `1-64 letters, digits and "_", not starting with a digit`}
	}
	return issue{}
}

// parseAddress reads a VIP: an IPv4 or IPv6 address alone or with its host
// prefix length. The result is always a /32 or /128.
func parseAddress(s string) (netip.Prefix, issue) {
	if s == "" {
		return netip.Prefix{}, errEmpty
	}
	if strings.Contains(s, "%") {
		return netip.Prefix{}, issue{msg: "zoned address not allowed"}
	}
	p, err := health.ParseAddrOrPrefix(s)
	if err != nil {
		return netip.Prefix{}, issue{msg: "not an IP address"}
	}
	a := p.Addr()
	switch {
	case a.Is4In6():
		return netip.Prefix{}, issue{msg: "IPv4-mapped IPv6 address not allowed, write it as IPv4"}
	case !health.IsHost(p):
		return netip.Prefix{}, issue{msg: "not a host address", allowed: "an address alone, or with /32 (IPv4) or /128 (IPv6)"}
	case a.IsUnspecified():
		return netip.Prefix{}, issue{msg: "unspecified address cannot be a VIP"}
	case a.IsMulticast():
		return netip.Prefix{}, issue{msg: "multicast address cannot be a VIP"}
	}
	if kind := unmanageable(a); kind != "" {
		return netip.Prefix{}, issue{msg: kind + " address cannot be a VIP", allowed: "a unicast address routable beyond the host"}
	}
	return p, issue{}
}

// unmanageable names the kind of a that rhi could add to the interface but
// not manage, or returns "". Link-local addresses are left out when rhi
// reads the interface back (they come with every link), so one would be
// added again on every tick and never seen; the kernel and BIRD treat the
// others as local to the host or as never routable, so the peer would
// never learn them.
func unmanageable(a netip.Addr) string {
	switch {
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsLoopback():
		return "loopback"
	case a.Is6() && isV4Compatible(a):
		return "IPv4-compatible IPv6 (::/96, deprecated)"
	case !a.Is4():
		return ""
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	case a.As4()[0] >= 240:
		return "reserved (class E, 240.0.0.0/4)"
	case a.As4()[0] == 0:
		return `"this network" (0.0.0.0/8)`
	}
	return ""
}

// isV4Compatible reports whether a is in ::/96, the deprecated
// IPv4-compatible IPv6 addresses (RFC 4291 §2.5.5.1): "::1.2.3.4" reads as
// 1.2.3.4, and no router is meant to route it.
func isV4Compatible(a netip.Addr) bool {
	b := a.As16()
	return [12]byte(b[:12]) == [12]byte{}
}

// parseUpstream checks an upstream key by the health source's rule and
// returns it with the resource it reads; see KeyRule.
func parseUpstream(s string, rule KeyRule) (health.Upstream, string, issue) {
	if s == "" {
		return health.Upstream{}, "", errEmpty
	}
	res, err := rule.resource(s)
	if err == nil {
		return health.Upstream{Key: s}, res, issue{}
	}
	if a, ok := errors.AsType[allowedError](err); ok {
		return health.Upstream{}, "", issue{msg: a.Problem(), allowed: a.Allowed()}
	}
	return health.Upstream{}, "", issue{msg: err.Error()}
}

// checkLogPath accepts "" (standard error) or a file path.
func checkLogPath(s string) issue {
	if s == "" {
		return issue{}
	}
	return checkFilePath(s)
}

// checkFilePath accepts any non-empty path without NUL bytes.
func checkFilePath(s string) issue {
	switch {
	case s == "":
		return errEmpty
	case strings.ContainsRune(s, 0):
		return issue{msg: "contains a NUL byte"}
	}
	return issue{}
}

// DefaultDrainGrace is drain_grace when the file sets none: how long a
// drained VIP stays announced in last resort (GRACEFUL_SHUTDOWN, the
// largest prepend) before it is withdrawn. In the two-site lab the router
// moved its traffic within a few milliseconds of the step down; 5 s leaves
// room for a larger network's path hunting and still ends a drain promptly
// (docs/semantics.md, "Drain").
const DefaultDrainGrace = 5 * time.Second

// MaxDrainGrace is the longest drain_grace. A withdrawing shutdown waits
// for the longest one before it withdraws, and the unit's TimeoutStopSec
// (100 s) must cover that wait, the withdrawal and BIRD's confirmation.
const MaxDrainGrace = 60 * time.Second

// parseDrainGrace reads drain_grace: zero ("0", "0s": withdraw at once) or
// a duration of at most MaxDrainGrace.
func parseDrainGrace(s string) (time.Duration, issue) {
	graceHint := "0s (withdraw at once) to " + MaxDrainGrace.String()
	switch d, err := time.ParseDuration(s); {
	case (err == nil && d == 0) || s == "0":
		return 0, issue{}
	case err == nil && d < 0:
		return 0, issue{msg: "must not be negative", allowed: graceHint}
	}
	d, is := parseDuration(s)
	switch {
	case !is.ok():
		return 0, is
	case d > MaxDrainGrace:
		return 0, issue{msg: "too long", allowed: graceHint}
	}
	return d, issue{}
}
