package verify

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rhi-daemon/rhi/internal/router"
)

func unmanaged(p netip.Prefix) router.VIP {
	return router.VIP{Prefix: p, Expected: router.Unmanaged, OnInterface: true}
}

// An address on the interface that rhi does not manage is a mismatch
// exactly when BIRD exports it, and never makes its family required.
func TestCheckUnmanaged(t *testing.T) {
	tests := []struct {
		name      string
		situation string
		replies   func(map[string]string)
		in        []router.VIP
		want      []router.VIPReport
		problems  []string
		exit      int
		summary   string
	}{
		{
			name:      "exported",
			situation: "up-vip",
			in:        []router.VIP{unmanaged(vip4)},
			want: []router.VIPReport{{Prefix: vip4, Expected: router.Unmanaged, OnInterface: true, InTable: true, DirectUp: true,
				Exported: map[string]bool{"peer_b": true},
				Problem:  "announced without a health check: neither configured nor put there by rhi, exported to peer_b"}},
			exit:    router.ExitMismatch,
			summary: "MISMATCH: 0 of 0 VIPs agree with BIRD, 2 of 2 protocols Established, 1 unmanaged address(es) exported without a health check",
		},
		{
			name:      "on the interface, not exported",
			situation: "up-novip",
			in:        []router.VIP{absent(vip6), unmanaged(vip4)},
			want: []router.VIPReport{
				{Prefix: vip6, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b6": false}, Agrees: true},
				{Prefix: vip4, Expected: router.Unmanaged, OnInterface: true, DirectUp: true, Exported: map[string]bool{"peer_b": false}, Agrees: true},
			},
			exit:    router.ExitConsistent,
			summary: "consistent: 1 of 1 VIPs agree with BIRD, 2 of 2 protocols Established",
		},
		{
			name:      "its family is not required",
			situation: "up-novip",
			replies:   func(m map[string]string) { m[showProtocols] = withoutDirectIPv6(m[showProtocols]) },
			in:        []router.VIP{absent(vip4), unmanaged(vip6)},
			want: []router.VIPReport{
				{Prefix: vip4, Expected: router.Absent, DirectUp: true, Exported: map[string]bool{"peer_b": false}, Agrees: true},
				{Prefix: vip6, Expected: router.Unmanaged, OnInterface: true, Exported: map[string]bool{"peer_b6": false}, Agrees: true},
			},
			exit:    router.ExitConsistent,
			summary: "consistent: 1 of 1 VIPs agree with BIRD, 2 of 2 protocols Established",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := checkCase{situation: tt.situation, in: router.Input{VIPs: tt.in}, replies: map[string]string{}}
			if tt.replies != nil {
				m := lab(t, tt.situation)
				tt.replies(m)
				tc.replies = m
			}
			got, _ := runCase(t, tc)
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			if diff := cmp.Diff(tt.want, got.VIPs, cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
				t.Errorf("VIPs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, got.Problems, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if got.ExitCode() != tt.exit {
				t.Errorf("exit %d, want %d", got.ExitCode(), tt.exit)
			}
			if got.Summary() != tt.summary {
				t.Errorf("summary %q\nwant    %q", got.Summary(), tt.summary)
			}
			var b strings.Builder
			if err := got.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if tt.exit == router.ExitMismatch && !strings.Contains(b.String(), vip4.String()+"  unmanaged") {
				t.Errorf("table does not name the address as unmanaged:\n%s", b.String())
			}
		})
	}
}
