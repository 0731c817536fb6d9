package config

import (
	"strings"
	"testing"
)

func TestLastResortAndSiteID(t *testing.T) {
	c, err := Parse("rhi.yaml", []byte("last_resort: {interface: lr0}\nsite_id: 192.0.2.7\n"), apisixKeys)
	if err != nil {
		t.Fatal(err)
	}
	if c.LastResort.Interface != "lr0" || c.SiteID != 0xc0000207 || c.SiteID.String() != "192.0.2.7" {
		t.Errorf("got %+v, site %d (%v)", c.LastResort, c.SiteID, c.SiteID)
	}
	c, err = Parse("rhi.yaml", []byte("site_id: 7\n"), apisixKeys)
	if err != nil || c.SiteID != 7 || c.LastResort.Interface != "rhi2" {
		t.Errorf("got %v, %+v", err, c)
	}
}

func TestLastResortErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"last_resort: {interface: rhi0}\n", `rhi.yaml:1: last_resort.interface: last_resort.interface and interface are the same: each tier needs its own interface (got "rhi0")`},
		{"last_resort: {interface: rhi1}\n", `rhi.yaml:1: last_resort.interface: last_resort.interface and degraded.interface are the same: each tier needs its own interface (got "rhi1")`},
		{"interface: rhi2\nfail_open: {min_other_sites: 1}\n", `rhi.yaml:1: interface: last_resort.interface and interface are the same: each tier needs its own interface (got "rhi2")`},
		{"degraded:\n  interface: rhi2\nfail_open: {min_other_sites: 1}\n", `rhi.yaml:2: degraded.interface: last_resort.interface and degraded.interface are the same`},
		{"last_resort: {interface: a/b}\n", `rhi.yaml:1: last_resort.interface: not a Linux interface name`},
		{"last_resort: {iface: x}\n", `rhi.yaml:1: last_resort.iface: unknown key`},
		{"site_id: 0\n", `rhi.yaml:1: site_id: out of range (got "0"`},
		{"site_id: 4294967296\n", `rhi.yaml:1: site_id: out of range (got "4294967296"`},
		{"site_id: 0.0.0.0\n", `rhi.yaml:1: site_id: not a non-zero IPv4 dotted quad (got "0.0.0.0"`},
		{"site_id: 2001:db8::1\n", `rhi.yaml:1: site_id: not a non-zero IPv4 dotted quad`},
		{"site_id: paris\n", `rhi.yaml:1: site_id: not a whole number or a dotted quad (got "paris"`},
	} {
		_, err := Parse("rhi.yaml", []byte(tc.yaml), apisixKeys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.yaml, err, tc.want)
		}
	}
}

// TestLastResortNoClashWithoutGuard: a file that names rhi2 as its main
// interface and has no guard stays valid.
func TestLastResortNoClashWithoutGuard(t *testing.T) {
	if _, err := Parse("rhi.yaml", []byte("interface: rhi2\n"), apisixKeys); err != nil {
		t.Error(err)
	}
}

func TestLastResortRestartOnly(t *testing.T) {
	a, b := Default(), Default()
	b.LastResort.Interface, b.SiteID = "lr9", 9
	if ch := Diff(&a, &b); strings.Join(ch.RestartOnly, ",") != "last_resort.interface,site_id" {
		t.Errorf("restart only %v", ch.RestartOnly)
	}
}
