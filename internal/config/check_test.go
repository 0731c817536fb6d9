package config

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		name, in string
		want     time.Duration
		wantMsg  string
	}{
		{"go seconds", "3s", 3 * time.Second, ""},
		{"milliseconds", "500ms", 500 * time.Millisecond, ""},
		{"minutes", "1m", time.Minute, ""},
		{"compound", "1m30s", 90 * time.Second, ""},
		{"bare integer is seconds", "3", 3 * time.Second, ""},
		{"plus sign", "+2", 2 * time.Second, ""},
		{"zero integer", "0", 0, "must be positive"},
		{"zero duration", "0s", 0, "must be positive"},
		{"negative integer", "-1", 0, "must be positive"},
		{"negative duration", "-3s", 0, "must be positive"},
		{"float", "1.5", 0, "not a duration"},
		{"space before unit", "3 s", 0, "not a duration"},
		{"unit case", "3S", 0, "not a duration"},
		{"hex", "0x10", 0, "not a duration"},
		{"seconds overflow", "9999999999999", 0, "too long"},
		{"largest bare seconds", "9223372036", 9223372036 * time.Second, ""},
		{"one past the largest", "9223372037", 0, "too long"},
		// Multiplied first, these wrapped to ~270 and ~292 years.
		{"huge negative integer", "-10000000000", 0, "must be positive"},
		{"negative just past the range", "-9223372037", 0, "must be positive"},
		{"duration overflow", "9999999h", 0, "not a duration"},
		{"empty", "", 0, "empty value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, is := parseDuration(tt.in)
			if got != tt.want || is.msg != tt.wantMsg {
				t.Errorf("parseDuration(%q) = %v, %q; want %v, %q", tt.in, got, is.msg, tt.want, tt.wantMsg)
			}
		})
	}
}

// apisix_poll_interval has a lower bound, exact.
func TestParsePollInterval(t *testing.T) {
	tests := []struct {
		name, in    string
		want        time.Duration
		wantMsg     string
		wantAllowed string
	}{
		{"the bound", "100ms", 100 * time.Millisecond, "", ""},
		{"whole seconds", "1", time.Second, "", ""},
		{"just under", "99ms", 0, "too short", "at least 100ms"},
		{"a nanosecond", "1ns", 0, "too short", "at least 100ms"},
		{"zero keeps its message", "0", 0, "must be positive", ""},
		{"garbage keeps its message", "fast", 0, "not a duration", durationHint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, is := parsePollInterval(tt.in)
			if got != tt.want || is.msg != tt.wantMsg || is.allowed != tt.wantAllowed {
				t.Errorf("parsePollInterval(%q) = %v, %+v; want %v, %q (allowed: %q)", tt.in, got, is, tt.want, tt.wantMsg, tt.wantAllowed)
			}
		})
	}
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
		wantMsg  string
	}{
		{"one", "1", 1, ""},
		{"many", "1000", 1000, ""},
		{"zero", "0", 0, "must be at least 1"},
		{"negative", "-2", 0, "must be at least 1"},
		{"fraction", "2.5", 0, "not a whole number"},
		{"word", "two", 0, "not a whole number"},
		{"empty", "", 0, "empty value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, is := parseCount(tt.in)
			if got != tt.want || is.msg != tt.wantMsg {
				t.Errorf("parseCount(%q) = %v, %q; want %v, %q", tt.in, got, is.msg, tt.want, tt.wantMsg)
			}
		})
	}
}

func TestParseAddress(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // prefix; "" when an error is expected
		wantMsg  string
	}{
		{"ipv4 bare", "10.0.0.100", "10.0.0.100/32", ""},
		{"ipv4 host prefix", "10.0.0.100/32", "10.0.0.100/32", ""},
		{"ipv6 bare", "fd00::1", "fd00::1/128", ""},
		{"ipv6 host prefix", "fd00::1/128", "fd00::1/128", ""},
		{"ipv6 long form normalised", "fd00:0:0::0001", "fd00::1/128", ""},
		{"ipv4 network", "10.0.0.0/24", "", "not a host address"},
		{"ipv4 host bits with short prefix", "10.0.0.100/24", "", "not a host address"},
		{"ipv6 network", "fd00::/64", "", "not a host address"},
		{"zone", "fe80::1%eth0", "", "zoned address not allowed"},
		{"zone with prefix", "fe80::1%eth0/128", "", "zoned address not allowed"},
		{"4in6", "::ffff:10.0.0.1", "", "IPv4-mapped IPv6 address not allowed, write it as IPv4"},
		{"4in6 prefix", "::ffff:10.0.0.1/128", "", "IPv4-mapped IPv6 address not allowed, write it as IPv4"},
		{"unspecified v4", "0.0.0.0", "", "unspecified address cannot be a VIP"},
		{"unspecified v6", "::/128", "", "unspecified address cannot be a VIP"},
		{"multicast", "239.1.1.1", "", "multicast address cannot be a VIP"},
		{"multicast v6", "ff02::1", "", "multicast address cannot be a VIP"},
		{"link-local v4", "169.254.1.1", "", "link-local address cannot be a VIP"},
		{"link-local v4 with prefix", "169.254.255.254/32", "", "link-local address cannot be a VIP"},
		{"link-local v6", "fe80::1", "", "link-local address cannot be a VIP"},
		{"link-local v6 top of fe80::/10", "febf:ffff::1", "", "link-local address cannot be a VIP"},
		{"loopback v4", "127.0.0.1", "", "loopback address cannot be a VIP"},
		{"loopback v4 in 127/8", "127.255.0.9", "", "loopback address cannot be a VIP"},
		{"loopback v6", "::1", "", "loopback address cannot be a VIP"},
		{"broadcast", "255.255.255.255", "", "broadcast address cannot be a VIP"},
		{"class E", "240.0.0.1", "", "reserved (class E, 240.0.0.0/4) address cannot be a VIP"},
		{"class E top", "255.255.255.254", "", "reserved (class E, 240.0.0.0/4) address cannot be a VIP"},
		{"this network", "0.1.2.3", "", `"this network" (0.0.0.0/8) address cannot be a VIP`},
		{"just below link-local", "169.253.255.255", "169.253.255.255/32", ""},
		{"just past loopback", "128.0.0.1", "128.0.0.1/32", ""},
		{"just below class E", "239.255.255.255", "", "multicast address cannot be a VIP"},
		{"unique local v6", "fd00::5", "fd00::5/128", ""},
		{"just past link-local v6", "fec0::1", "fec0::1/128", ""},
		{"ipv4-compatible v6", "::1.2.3.4", "", "IPv4-compatible IPv6 (::/96, deprecated) address cannot be a VIP"},
		{"ipv4-compatible v6 top", "::ffff:ffff", "", "IPv4-compatible IPv6 (::/96, deprecated) address cannot be a VIP"},
		{"just past ipv4-compatible v6", "::1:0:0", "::1:0:0/128", ""},
		{"octet too big", "10.0.0.300", "", "not an IP address"},
		{"name", "api.example.com", "", "not an IP address"},
		{"bad prefix length", "10.0.0.1/33", "", "not an IP address"},
		{"empty", "", "", "empty value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, is := parseAddress(tt.in)
			var want netip.Prefix
			if tt.want != "" {
				want = netip.MustParsePrefix(tt.want)
			}
			if got != want || is.msg != tt.wantMsg {
				t.Errorf("parseAddress(%q) = %v, %q; want %v, %q", tt.in, got, is.msg, want, tt.wantMsg)
			}
		})
	}
}

// An upstream key is checked by the health source's rule, whose message
// and list of allowed values the config shows; without a rule, a key need
// only be a path.
func TestParseUpstream(t *testing.T) {
	types := strings.Join(apisix.Types, ", ")
	tests := []struct {
		name, in         string
		rule             KeyRule
		res              string // the resource, "" when refused
		wantMsg, allowed string
	}{
		{"etcd prefix", "/apisix/upstreams/api", apisix.UpstreamKey, "upstreams/api", "", ""},
		{"standalone", "/upstreams/api", apisix.UpstreamKey, "upstreams/api", "", ""},
		{"deep prefix", "/a/b/c/stream_routes/x.y-z_1", apisix.UpstreamKey, "stream_routes/x.y-z_1", "", ""},
		{"one segment", "/api", apisix.UpstreamKey, "", "must be /<type>/<id> or /<prefix>/<type>/<id>", ""},
		{"unknown type", "/apisix/upstream/api", apisix.UpstreamKey, "", `unknown resource type "upstream"`, types},
		{"bad id character", "/upstreams/a b", apisix.UpstreamKey, "", `id "a b" must be 1-64 characters of [A-Za-z0-9._-]`, ""},
		{"empty", "", apisix.UpstreamKey, "", "empty value", ""},
		{"path, no rule", "/api", nil, "/api", "", ""},
		{"no leading slash, no rule", "apisix/upstreams/api", nil, "", `must start with "/"`, ""},
		{"trailing slash, no rule", "/apisix/upstreams/api/", nil, "", `must not end with "/"`, ""},
		{"empty segment, no rule", "/apisix//upstreams/api", nil, "", "empty path segment", ""},
		{"empty, no rule", "", nil, "", "empty value", ""},
		{"wrapped list of allowed", "/a", wrapsAllowed, "", "no such kind", "x, y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, res, is := parseUpstream(tt.in, tt.rule)
			wantKey := ""
			if tt.res != "" {
				wantKey = tt.in // the key is kept as written
			}
			if res != tt.res || got.Key != wantKey || is.msg != tt.wantMsg || is.allowed != tt.allowed {
				t.Errorf("parseUpstream(%q) = %v, %q, %+v; want %q, %q (allowed %q)", tt.in, got, res, is, tt.res, tt.wantMsg, tt.allowed)
			}
		})
	}
}

// wrapsAllowed is a KeyRule whose error wraps one that lists what is
// allowed.
func wrapsAllowed(key string) (string, error) {
	return "", fmt.Errorf("key %s: %w", key, kindError{})
}

type kindError struct{}

func (kindError) Error() string   { return "no such kind (allowed: x, y)" }
func (kindError) Problem() string { return "no such kind" }
func (kindError) Allowed() string { return "x, y" }

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name, in, want, wantMsg string
	}{
		{"default", "http://127.0.0.1:9090", "http://127.0.0.1:9090", ""},
		{"https with path", "https://adc.example:9443/control", "https://adc.example:9443/control", ""},
		{"trailing slashes dropped", "http://127.0.0.1:9090//", "http://127.0.0.1:9090", ""},
		{"ipv6 host", "http://[::1]:9090", "http://[::1]:9090", ""},
		{"ftp", "ftp://127.0.0.1", "", "unsupported scheme"},
		{"no scheme", "127.0.0.1:9090", "", "not a URL"},
		{"host only", "localhost", "", "unsupported scheme"},
		{"no host", "http:///v1", "", "missing host"},
		{"port only", "http://:9090", "", "missing host"},
		{"query", "http://h/?a=1", "", "must not have a query or fragment"},
		{"empty query", "http://h/?", "", "must not have a query or fragment"},
		{"fragment", "http://h/#x", "", "must not have a query or fragment"},
		{"port zero", "http://h:0", "", "port out of range"},
		{"port too big", "http://h:99999", "", "port out of range"},
		{"empty", "", "", "empty value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, is := checkURL(tt.in)
			if got != tt.want || is.msg != tt.wantMsg {
				t.Errorf("checkURL(%q) = %q, %q; want %q, %q", tt.in, got, is.msg, tt.want, tt.wantMsg)
			}
		})
	}
}

// checkTests runs a table of string checks that only accept or refuse.
func checkTests(t *testing.T, check func(string) issue, tests []struct{ name, in, wantMsg string }) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if is := check(tt.in); is.msg != tt.wantMsg {
				t.Errorf("check(%q) = %q, want %q", tt.in, is.msg, tt.wantMsg)
			}
		})
	}
}

func TestCheckIfname(t *testing.T) {
	const bad = "not a Linux interface name"
	checkTests(t, checkIfname, []struct{ name, in, wantMsg string }{
		{"default", "rhi0", ""},
		{"15 bytes", "abcdefghijklmno", ""},
		{"dots and dashes", "vip-0.100", ""},
		{"16 bytes", "abcdefghijklmnop", bad},
		{"colon alias", "eth0:1", bad},
		{"slash", "a/b", bad},
		{"space", "a b", bad},
		{"tab", "a\tb", bad},
		{"nbsp byte", "a\xa0b", bad},
		{"nul", "a\x00b", bad},
		{"dot", ".", bad},
		{"dotdot", "..", bad},
		{"empty", "", "empty value"},
	})
}

func TestCheckListen(t *testing.T) {
	checkTests(t, checkListen, []struct{ name, in, wantMsg string }{
		{"default", "127.0.0.1:9711", ""},
		{"disabled", "", ""},
		{"all addresses", ":9711", ""},
		{"ipv6", "[::1]:9711", ""},
		{"name", "localhost:9711", ""},
		{"no port", "localhost", "not a host:port address"},
		{"ipv6 without brackets", "::1:9711", "not a host:port address"},
		{"port zero", "127.0.0.1:0", "port must be a number from 1 to 65535"},
		{"named port", "127.0.0.1:http", "port must be a number from 1 to 65535"},
		{"port too big", "127.0.0.1:65536", "port must be a number from 1 to 65535"},
	})
}

func TestCheckProtocol(t *testing.T) {
	const bad = "not a BIRD protocol name"
	checkTests(t, checkProtocol, []struct{ name, in, wantMsg string }{
		{"simple", "peer1", ""},
		{"underscore first", "_p", ""},
		{"64 characters", strings.Repeat("p", 64), ""},
		{"65 characters", strings.Repeat("p", 65), bad},
		{"digit first", "1peer", bad},
		{"dash", "peer-1", bad},
		{"empty", "", "empty value"},
	})
}

func TestCheckSocket(t *testing.T) {
	checkTests(t, checkSocket, []struct{ name, in, wantMsg string }{
		{"default", "/run/bird/bird.ctl", ""},
		{"107 bytes", "/" + strings.Repeat("s", 106), ""},
		{"108 bytes", "/" + strings.Repeat("s", 107), "longer than 107 bytes, the limit for a unix socket path"},
		{"empty", "", "empty value"},
	})
}

func TestOneOf(t *testing.T) {
	if is := oneOf("any", "all", "any"); !is.ok() {
		t.Errorf("oneOf(any) = %+v, want ok", is)
	}
	if is := oneOf("All", "all", "any"); is != (issue{msg: "unknown value", allowed: "all, any"}) {
		t.Errorf("oneOf(All) = %+v, want unknown value", is)
	}
	if is := oneOf("", "all", "any"); is != (issue{msg: "empty value", allowed: "all, any"}) {
		t.Errorf("oneOf(\"\") = %+v, want empty value", is)
	}
}
