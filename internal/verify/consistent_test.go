package verify

import (
	"errors"
	"testing"

	"github.com/rhi-daemon/rhi/internal/router"
)

// TestConsistentAndVIPsAgree: Consistent is every VIP and every selected
// protocol; VIPsAgree only the VIPs, so a withdrawal is confirmed while a
// session is down; neither holds for a check that was not made.
func TestConsistentAndVIPsAgree(t *testing.T) {
	agree := router.VIPReport{Prefix: vip4, Expected: router.Absent, Agrees: true}
	disagree := router.VIPReport{Prefix: vip6, Expected: router.Absent, Problem: "still exported to peer_b6"}
	down := router.ProtocolState{Name: "peer_b", State: "start", BGPState: "Active", Problem: "not Established"}
	tests := []struct {
		name                  string
		r                     router.Report
		consistent, vipsAgree bool
	}{
		{"empty", router.Report{}, true, true},
		{"all agree", router.Report{VIPs: []router.VIPReport{agree}, Protocols: []router.ProtocolState{{Name: "peer_b", Established: true}}}, true, true},
		{"a VIP disagrees", router.Report{VIPs: []router.VIPReport{agree, disagree}}, false, false},
		{"a session down", router.Report{VIPs: []router.VIPReport{agree}, Protocols: []router.ProtocolState{down}}, false, true},
		{"a problem of the set", router.Report{VIPs: []router.VIPReport{agree}, Problems: []string{"no direct protocol for IPv4"}}, false, true},
		{"not checked", router.Report{Err: errors.New("dial: refused")}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Consistent(); got != tc.consistent {
				t.Errorf("Consistent() = %v, want %v", got, tc.consistent)
			}
			if got := tc.r.VIPsAgree(); got != tc.vipsAgree {
				t.Errorf("VIPsAgree() = %v, want %v", got, tc.vipsAgree)
			}
			if (tc.r.ExitCode() == router.ExitConsistent) != tc.consistent {
				t.Errorf("ExitCode() = %d disagrees with Consistent() = %v", tc.r.ExitCode(), tc.consistent)
			}
		})
	}
}
