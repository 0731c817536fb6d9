package status

import (
	"strings"
	"testing"
	"time"
)

func TestMetricsUnmanaged(t *testing.T) {
	s := sample()
	s.Interface.Unmanaged = []string{"10.0.0.77/32", "2001:db8::9/128"}
	s.Interface.RecordError = "read-only file system"
	src := &fixed{s}
	_, body := get(t, Handler(src, NewMetrics(src, "v1"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{
		`rhi_unmanaged_addresses{iface="rhi0"} 2`,
		`rhi_unmanaged_address{address="10.0.0.77/32",iface="rhi0"} 1`,
		`rhi_unmanaged_address{address="2001:db8::9/128",iface="rhi0"} 1`,
		`rhi_ownership_record_error 1`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	src.s = sample()
	_, body = get(t, Handler(src, NewMetrics(src, "v1"), func() time.Time { return t0 }), "/metrics")
	for _, line := range []string{`rhi_unmanaged_addresses{iface="rhi0"} 0`, `rhi_ownership_record_error 0`} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if strings.Contains(body, "rhi_unmanaged_address{") {
		t.Errorf("a per-address series without unmanaged addresses:\n%s", body)
	}
}
