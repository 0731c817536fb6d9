package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkLoad10000VIPs loads a config at the scale rhi is built for:
// 10,000 VIPs (half IPv4, half IPv6) over 10,000 upstreams.
func BenchmarkLoad10000VIPs(b *testing.B) {
	const n = 10000
	var sb strings.Builder
	sb.WriteString("apisix_poll_interval: 1s\nbird:\n  protocols: [peer1, peer2]\nvips:\n")
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
		if i%2 == 1 {
			addr = fmt.Sprintf("2001:db8::%x/128", i)
		}
		fmt.Fprintf(&sb, "  - address: %s\n    description: \"service %d\"\n    upstreams:\n      - /apisix/upstreams/u%d\n      - /apisix/routes/r%d\n    condition: any\n",
			addr, i, i, i)
	}
	path := filepath.Join(b.TempDir(), "rhi.yaml")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		c, err := Load(path, apisixKeys)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.VIPs) != n {
			b.Fatalf("%d VIPs, want %d", len(c.VIPs), n)
		}
	}
}
