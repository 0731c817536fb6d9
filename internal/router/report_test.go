package router

import (
	"errors"
	"net/netip"
	"testing"
)

// TestConsistentAndVIPsAgree: Consistent is every VIP and every selected
// protocol; VIPsAgree only the VIPs, so a withdrawal is confirmed while a
// session is down; neither holds for a check that was not made.
func TestConsistentAndVIPsAgree(t *testing.T) {
	vip4, vip6 := netip.MustParsePrefix("192.0.2.10/32"), netip.MustParsePrefix("2001:db8::10/128")
	agree := VIPReport{Prefix: vip4, Expected: Absent, Agrees: true}
	disagree := VIPReport{Prefix: vip6, Expected: Absent, Problem: "still exported to peer_b6"}
	down := ProtocolState{Name: "peer_b", State: "start", BGPState: "Active", Problem: "not Established"}
	tests := []struct {
		name                  string
		r                     Report
		consistent, vipsAgree bool
	}{
		{"empty", Report{}, true, true},
		{"all agree", Report{VIPs: []VIPReport{agree}, Protocols: []ProtocolState{{Name: "peer_b", Established: true}}}, true, true},
		{"a VIP disagrees", Report{VIPs: []VIPReport{agree, disagree}}, false, false},
		{"a session down", Report{VIPs: []VIPReport{agree}, Protocols: []ProtocolState{down}}, false, true},
		{"a problem of the set", Report{VIPs: []VIPReport{agree}, Problems: []string{"no direct protocol for IPv4"}}, false, true},
		{"not checked", Report{Err: errors.New("dial: refused")}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Consistent(); got != tc.consistent {
				t.Errorf("Consistent() = %v, want %v", got, tc.consistent)
			}
			if got := tc.r.VIPsAgree(); got != tc.vipsAgree {
				t.Errorf("VIPsAgree() = %v, want %v", got, tc.vipsAgree)
			}
			if (tc.r.ExitCode() == ExitConsistent) != tc.consistent {
				t.Errorf("ExitCode() = %d disagrees with Consistent() = %v", tc.r.ExitCode(), tc.consistent)
			}
		})
	}
}
