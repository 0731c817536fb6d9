package health

import (
	"net/netip"
	"testing"
)

func TestParseHostPrefix(t *testing.T) {
	tests := []struct {
		in      string
		want    string // "" for an error
		anyBits string // ParseAddrOrPrefix's result when it differs from want
	}{
		{"10.0.0.1", "10.0.0.1/32", ""},
		{"10.0.0.1/32", "10.0.0.1/32", ""},
		{"2001:db8::1", "2001:db8::1/128", ""},
		{"2001:db8::1/128", "2001:db8::1/128", ""},
		{"fe80::1%eth0", "fe80::1/128", ""}, // the zone is dropped
		{"::ffff:10.0.0.1", "::ffff:10.0.0.1/128", ""},
		{"10.0.0.0/24", "", "10.0.0.0/24"},
		{"2001:db8::/64", "", "2001:db8::/64"},
		{"::ffff:10.0.0.0/120", "", "::ffff:10.0.0.0/120"},
		{"10.0.0.1/33", "", ""},
		{"fe80::1%eth0/128", "", ""},
		{"", "", ""},
		{"10.0.0", "", ""},
		{"all", "", ""},
	}
	for _, tt := range tests {
		p, err := ParseHostPrefix(tt.in)
		if got := p.String(); (tt.want == "") != (err != nil) || (err == nil && got != tt.want) {
			t.Errorf("ParseHostPrefix(%q) = %s, %v; want %q", tt.in, got, err, tt.want)
		}
		want := tt.want
		if tt.anyBits != "" {
			want = tt.anyBits
		}
		p, err = ParseAddrOrPrefix(tt.in)
		if got := p.String(); (want == "") != (err != nil) || (err == nil && got != want) {
			t.Errorf("ParseAddrOrPrefix(%q) = %s, %v; want %q", tt.in, got, err, want)
		}
		if err == nil && IsHost(p) != (tt.want != "") {
			t.Errorf("IsHost(%s) = %v", p, IsHost(p))
		}
	}
	if _, err := ParseHostPrefix("10.0.0.0/8"); err == nil || err.Error() != `"10.0.0.0/8" is not a host prefix` {
		t.Errorf("error %v, want it to name the input", err)
	}
	if IsHost(netip.Prefix{}) {
		t.Error("the zero Prefix is a host")
	}
}
