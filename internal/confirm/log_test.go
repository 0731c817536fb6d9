package confirm

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/router"
)

// A session down under 1,000 VIPs: one line that counts them and names a
// few, with the longest disagreement.
func TestVIPLogGroups(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	var l vipLog
	for i := range 1000 {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(i%250 + 1)}), 32)
		l.disagrees(router.VIPReport{Prefix: p, Expected: router.Present, Problem: "no Established BGP session carries it"}, time.Duration(i)*time.Millisecond)
	}
	one := router.VIPReport{Prefix: netip.MustParsePrefix("fd00::1/128"), Expected: router.Absent, Problem: "still in BIRD's table"}
	l.disagrees(one, 6*time.Second)
	l.agrees(one, time.Second)
	l.agrees(router.VIPReport{Prefix: netip.MustParsePrefix("fd00::2/128"), Expected: router.Present}, 2*time.Second)
	l.flush(log)

	var got []string
	for _, e := range hook.AllEntries() {
		got = append(got, fmt.Sprintf("%s %s vip=%v vips=%v expected=%v problem=%v for=%v after=%v",
			e.Level, e.Message, e.Data["vip"], e.Data["vips"], e.Data["expected"], e.Data["problem"], e.Data["for"], e.Data["after"]))
	}
	want := []string{
		"error BIRD disagrees with the interface vip=10.0.0.1/32, 10.0.0.2/32, 10.0.0.3/32 and 997 more vips=1000 expected=present problem=no Established BGP session carries it for=999ms after=<nil>",
		"error BIRD disagrees with the interface vip=fd00::1/128 vips=<nil> expected=absent problem=still in BIRD's table for=6s after=<nil>",
		"warning BIRD agrees now vip=fd00::1/128, fd00::2/128 vips=2 expected=<nil> problem=<nil> for=<nil> after=2s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	hook.Reset()
	var empty vipLog
	empty.flush(log)
	if n := len(hook.AllEntries()); n != 0 {
		t.Errorf("nothing to say, %d lines", n)
	}
}
