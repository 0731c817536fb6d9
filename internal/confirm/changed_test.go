package confirm

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/router"
)

// TestJobChanged: ChangedAt answers for the report's i-th VIP when it is
// the job's i-th; otherwise Changed, keyed by prefix, does.
func TestJobChanged(t *testing.T) {
	a, b := netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.2/32")
	ta, tb, tm := time.Unix(1, 0), time.Unix(2, 0), time.Unix(3, 0)
	j := Job{
		In:        router.Input{VIPs: []router.VIP{{Prefix: a}, {Prefix: b}}},
		ChangedAt: []time.Time{ta, tb},
		Changed:   map[netip.Prefix]time.Time{a: tm},
	}
	if got := j.changed(0, a); !got.Equal(ta) {
		t.Errorf("in order: %v, want %v", got, ta)
	}
	if got := j.changed(1, b); !got.Equal(tb) {
		t.Errorf("in order: %v, want %v", got, tb)
	}
	if got := j.changed(1, a); !got.Equal(tm) {
		t.Errorf("out of order: %v, want the map's %v", got, tm)
	}
	if got := j.changed(2, b); !got.IsZero() {
		t.Errorf("beyond the job, not in the map: %v, want zero", got)
	}
}
