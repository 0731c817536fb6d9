package vip

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

func TestRenew(t *testing.T) {
	tests := []struct {
		name    string
		start   []string
		vip     string
		present bool
		ops     []string
		err     string
		after   string
	}{
		{"present: delete then add back", []string{"10.0.0.1/32"}, "10.0.0.1/32", true,
			[]string{"del 10.0.0.1/32", "add 10.0.0.1/32"}, "", want("10.0.0.1/32")},
		{"absent: add then delete", nil, "10.0.0.1/32", false,
			[]string{"add 10.0.0.1/32", "del 10.0.0.1/32"}, "", want()},
		{"ipv6 keeps nodad", []string{"2001:db8::1/128"}, "2001:db8::1/128", true,
			[]string{"del 2001:db8::1/128", "add 2001:db8::1/128"}, "", want("2001:db8::1/128 nodad")},
		{"refuses when the interface disagrees", nil, "10.0.0.1/32", true,
			nil, `vip "10.0.0.1/32": renew on "rhi0": the address is absent, not present`, want()},
		{"refuses a non-host prefix", nil, "10.0.0.0/24", false, nil, "not a /32 or /128", want()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, a, _ := newTest(t, tt.start...)
			err := a.Renew(context.Background(), netip.MustParsePrefix(tt.vip), tt.present)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if diff := cmpDiff(tt.ops, f.ops); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.after, f.String()); diff != "" {
				t.Errorf("kernel (-want +got):\n%s", diff)
			}
		})
	}
}
