package rtnl

import (
	"net/netip"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmpDiff is cmp.Diff that compares netip values with ==.
func cmpDiff(x, y any) string {
	return cmp.Diff(x, y, cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{}))
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}
