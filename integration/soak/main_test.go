package main

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rhi-daemon/rhi/integration/site"
)

func TestWant(t *testing.T) {
	w := &world{health: map[string]string{"/u/a": "healthy", "/u/b": "mostly_healthy", "/u/c": "unhealthy", "/u/d": "mostly_unhealthy"}}
	tests := []struct {
		name string
		vip  site.VIP
		want bool
	}{
		{"all up", site.VIP{Upstreams: []string{"/u/a", "/u/b"}, Condition: "all"}, true},
		{"all, one down", site.VIP{Upstreams: []string{"/u/a", "/u/c"}, Condition: "all"}, false},
		{"mostly unhealthy is down", site.VIP{Upstreams: []string{"/u/d"}, Condition: "all"}, false},
		{"any, one up", site.VIP{Upstreams: []string{"/u/c", "/u/b"}, Condition: "any"}, true},
		{"any, none up", site.VIP{Upstreams: []string{"/u/c", "/u/d"}, Condition: "any"}, false},
		{"empty condition is all", site.VIP{Upstreams: []string{"/u/a", "/u/d"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := w.want(tc.vip); got != tc.want {
				t.Errorf("want(%v) = %v, expected %v", tc.vip.Upstreams, got, tc.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	vips := plan(rand.New(rand.NewPCG(1, 2)), 500, 10)
	addrs := map[string]bool{}
	conds := map[string]int{}
	for _, v := range vips {
		if n := len(v.Upstreams); n < 1 || n > 3 {
			t.Errorf("vip %q has %d upstreams, want 1 to 3", v.Address, n)
		}
		u := slices.Clone(v.Upstreams)
		slices.Sort(u)
		if len(slices.Compact(u)) != len(v.Upstreams) {
			t.Errorf("vip %q repeats an upstream: %v", v.Address, v.Upstreams)
		}
		if addrs[v.Address] {
			t.Errorf("vip %q twice", v.Address)
		}
		addrs[v.Address] = true
		conds[v.Condition]++
	}
	if conds["all"] == 0 || conds["any"] == 0 || len(conds) != 2 {
		t.Errorf("conditions %v, want both all and any", conds)
	}
	if keys := site.Keys(vips); len(keys) != 10 {
		t.Errorf("%d distinct upstreams over 500 VIPs, want all 10", len(keys))
	}
}
