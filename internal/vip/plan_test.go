package vip

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// planText is changes as sorted text, for comparison.
type planText struct {
	Adds, Dels, Sightings, Errs, Foreign []string
	Hosts, Present                       int
}

func textOf(c changes) planText {
	var t planText
	opText := func(o op) string {
		if o.repair {
			return o.p.String() + " repair"
		}
		return o.p.String()
	}
	for _, o := range c.adds {
		t.Adds = append(t.Adds, opText(o))
	}
	for _, o := range c.dels {
		t.Dels = append(t.Dels, opText(o))
	}
	for _, s := range c.sightings {
		line := s.p.String() + " " + presence(s.present)
		if s.byOther {
			line += " by other"
		}
		t.Sightings = append(t.Sightings, line)
	}
	for _, err := range c.errs {
		t.Errs = append(t.Errs, err.Error())
	}
	for _, p := range c.foreign {
		t.Foreign = append(t.Foreign, p.String())
	}
	// Adds and dels keep plan's order, which must be sorted already.
	slices.Sort(t.Sightings)
	slices.Sort(t.Errs)
	slices.Sort(t.Foreign)
	t.Hosts, t.Present = c.hosts, c.present
	return t
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name    string
		addrs   []string // on the interface; "L peer P" for a point-to-point entry
		owned   map[netip.Prefix]bool
		reached map[netip.Prefix]bool // nil: no previous Set
		want    planText
	}{
		{name: "nothing", want: planText{}},
		{
			name:  "first call: every owned VIP is news; adds and dels sorted",
			addrs: []string{"10.0.0.9/32", "10.0.0.1/32"},
			owned: owned("10.0.0.10/32", "10.0.0.2/32", "2001:db8::1/128", "-10.0.0.9/32", "-10.0.0.1/32", "-10.0.0.3/32"),
			want: planText{
				Adds:      []string{"10.0.0.2/32", "10.0.0.10/32", "2001:db8::1/128"},
				Dels:      []string{"10.0.0.1/32", "10.0.0.9/32"},
				Sightings: []string{"10.0.0.1/32 present", "10.0.0.10/32 absent", "10.0.0.2/32 absent", "10.0.0.3/32 absent", "10.0.0.9/32 present", "2001:db8::1/128 absent"},
				Hosts:     6, Present: 2,
			},
		},
		{
			name:    "steady: as the previous Set left it, nothing to say",
			addrs:   []string{"10.0.0.1/32"},
			owned:   owned("10.0.0.1/32", "-10.0.0.2/32"),
			reached: map[netip.Prefix]bool{pfx("10.0.0.1/32"): true, pfx("10.0.0.2/32"): false},
			want:    planText{Hosts: 2, Present: 1},
		},
		{
			name:    "changed by someone else: repairs, and a change that is now as wanted",
			addrs:   []string{"10.0.0.2/32", "10.0.0.3/32"},
			owned:   owned("10.0.0.1/32", "-10.0.0.2/32", "10.0.0.3/32"),
			reached: map[netip.Prefix]bool{pfx("10.0.0.1/32"): true, pfx("10.0.0.2/32"): false, pfx("10.0.0.3/32"): false},
			want: planText{
				Adds:      []string{"10.0.0.1/32 repair"},
				Dels:      []string{"10.0.0.2/32 repair"},
				Sightings: []string{"10.0.0.1/32 absent by other", "10.0.0.2/32 present by other", "10.0.0.3/32 present by other"},
				Hosts:     3, Present: 2,
			},
		},
		{
			name:  "not a host prefix: an error, and foreign when it is there",
			addrs: []string{"10.0.0.0/24"},
			owned: owned("10.0.0.0/24", "::ffff:10.0.0.1/128", "10.0.0.1/32"),
			want: planText{
				Adds:      []string{"10.0.0.1/32"},
				Sightings: []string{"10.0.0.1/32 absent"},
				Errs:      []string{`vip "10.0.0.0/24": not a /32 or /128 host prefix`, `vip "::ffff:10.0.0.1/128": not a /32 or /128 host prefix`},
				Foreign:   []string{"10.0.0.0/24"},
				Hosts:     1,
			},
		},
		{
			name:  "foreign: whatever is not owned, a wider prefix of a VIP included",
			addrs: []string{"10.0.0.100/24", "10.0.0.100/32", "10.9.9.9/32"},
			owned: owned("10.0.0.100/32"),
			want: planText{
				Sightings: []string{"10.0.0.100/32 present"},
				Foreign:   []string{"10.0.0.100/24", "10.9.9.9/32"},
				Hosts:     1, Present: 1,
			},
		},
		{
			name:  "an IPv6 address taken with another length or by a peer entry is no add; IPv4 is",
			addrs: []string{"2001:db8::1/64", "2001:db8::2 peer 2001:db8::9/128", "10.9.0.1 peer 10.9.0.2/32"},
			owned: owned("2001:db8::1/128", "2001:db8::2/128", "2001:db8::3/128", "10.9.0.1/32"),
			want: planText{
				Adds:      []string{"10.9.0.1/32", "2001:db8::3/128"},
				Sightings: []string{"10.9.0.1/32 absent", "2001:db8::1/128 absent", "2001:db8::2/128 absent", "2001:db8::3/128 absent"},
				Errs: []string{
					`vip "2001:db8::1/128": add on "rhi0": the address is already there as "2001:db8::1/64"`,
					`vip "2001:db8::2/128": add on "rhi0": the address is already there as "2001:db8::2 peer 2001:db8::9/128"`,
				},
				Foreign: []string{"2001:db8::1/64"},
				Hosts:   4,
			},
		},
		{
			name:    "no longer owned: not plan's business, only counted out of hosts",
			addrs:   []string{"10.0.0.1/32", "10.0.0.5/32"},
			owned:   owned("10.0.0.1/32"),
			reached: map[netip.Prefix]bool{pfx("10.0.0.1/32"): true, pfx("10.0.0.5/32"): true},
			want:    planText{Foreign: []string{"10.0.0.5/32"}, Hosts: 1, Present: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addrs := map[netip.Prefix]struct{}{}
			var ptp []Peer
			for _, a := range tt.addrs {
				if strings.Contains(a, " peer ") {
					ptp = append(ptp, peers(a)...)
				} else {
					addrs[pfx(a)] = struct{}{}
				}
			}
			addrsBefore, ownedBefore, reachedBefore := maps.Clone(addrs), maps.Clone(tt.owned), maps.Clone(tt.reached)
			got := textOf(plan(iface, addrs, ptp, DesiredOf(tt.owned), tt.reached))
			if diff := cmpDiff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if !maps.Equal(addrs, addrsBefore) || !maps.Equal(tt.owned, ownedBefore) || !maps.Equal(tt.reached, reachedBefore) {
				t.Error("plan changed its arguments")
			}
		})
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// BenchmarkPlan is plan's share of a Set that changes nothing at 10,000
// VIPs: every VIP wanted, present, and where the previous Set left it.
func BenchmarkPlan(b *testing.B) {
	owned := benchOwned(10000)
	addrs := make(map[netip.Prefix]struct{}, len(owned))
	reached := make(map[netip.Prefix]bool, len(owned))
	for p := range owned {
		addrs[p] = struct{}{}
		reached[p] = true
	}
	want := DesiredOf(owned)
	b.ReportAllocs()
	for b.Loop() {
		if c := plan(iface, addrs, nil, want, reached); len(c.sightings)+len(c.adds)+len(c.dels) != 0 {
			b.Fatalf("plan of a steady state: %+v", textOf(c))
		}
	}
}
