package vip

import (
	"context"
	"net/netip"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// benchOwned returns n owned /32s, all wanted, from 10.0.0.0 upwards.
func benchOwned(n int) map[netip.Prefix]bool {
	m := make(map[netip.Prefix]bool, n)
	a := netip.MustParseAddr("10.0.0.0")
	for range n {
		a = a.Next()
		m[netip.PrefixFrom(a, 32)] = true
	}
	return m
}

// BenchmarkSet measures one Set over 10,000 owned VIPs: "noop" is the
// steady state (one read, no write), "flip1000" alternates between two
// desired sets that differ in 1,000 VIPs, so each call does 1,000 writes
// against the fake. Logging goes to a null logger at Info.
func BenchmarkSet(b *testing.B) {
	const n = 10000
	newBench := func(b *testing.B) (*fakeKernel, *Announcer) {
		f := newFakeKernel()
		f.addLink(iface)
		log, _ := logtest.NewNullLogger()
		log.SetLevel(logrus.InfoLevel)
		return f, New(f, iface, log)
	}
	b.Run("noop", func(b *testing.B) {
		f, a := newBench(b)
		desired := DesiredOf(benchOwned(n))
		if _, err := a.Set(context.Background(), desired); err != nil {
			b.Fatal(err)
		}
		writes := f.writes
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Set(context.Background(), desired); err != nil {
				b.Fatal(err)
			}
		}
		if f.writes != writes {
			b.Fatalf("no-op Set made %d writes", f.writes-writes)
		}
	})
	// The fake's own dump, which every Set pays for once: subtract it
	// from the figures above to get the Announcer's share.
	b.Run("fakedump", func(b *testing.B) {
		f, a := newBench(b)
		if _, err := a.Set(context.Background(), DesiredOf(benchOwned(n))); err != nil {
			b.Fatal(err)
		}
		link, err := f.LinkByName(iface)
		if err != nil {
			b.Fatal(err)
		}
		var into []netip.Prefix
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if into, _, err = f.AppendPrefixes(link.Attrs().Index, into[:0], nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flip1000", func(b *testing.B) {
		f, a := newBench(b)
		even, odd := benchOwned(n), benchOwned(n)
		i := 0
		for p := range odd {
			if i == 1000 {
				break
			}
			odd[p] = false
			i++
		}
		if _, err := a.Set(context.Background(), DesiredOf(even)); err != nil {
			b.Fatal(err)
		}
		sets := []Desired{DesiredOf(odd), DesiredOf(even)}
		calls := 0
		writes := f.writes
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Set(context.Background(), sets[calls%2]); err != nil {
				b.Fatal(err)
			}
			calls++
		}
		if got := f.writes - writes; got != calls*1000 {
			b.Fatalf("%d calls made %d writes, want 1,000 each", calls, got)
		}
	})
}
