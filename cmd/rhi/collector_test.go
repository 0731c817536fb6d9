package main

import (
	"strconv"
	"testing"
)

func TestTuneCollector(t *testing.T) {
	for _, tc := range []struct {
		env  string
		set  int // the GOGC set, 0 for none
		want string
	}{
		{"", defaultGOGC, strconv.Itoa(defaultGOGC) + " (rhi's default)"},
		{"100", 0, "100 (environment)"},
		{"off", 0, "off (environment)"},
		{"25", 0, "25 (environment)"},
	} {
		set := 0
		got := tuneCollector(func(k string) string {
			if k != "GOGC" {
				t.Errorf("getenv(%q), want GOGC", k)
			}
			return tc.env
		}, func(p int) int { set = p; return 100 })
		if got != tc.want || set != tc.set {
			t.Errorf("GOGC=%q: tuneCollector = %q, set %d; want %q, set %d", tc.env, got, set, tc.want, tc.set)
		}
	}
}
