package guardbird

import "net/netip"

var (
	vip4 = netip.MustParsePrefix("10.255.0.10/32")
	vip6 = netip.MustParsePrefix("fd00:255::10/128")
)
