package health

import (
	"fmt"
	"net/netip"
	"strings"
)

// A VIP is written as an address alone or with its host prefix length
// ("10.0.0.100", "10.0.0.100/32", "2001:db8::1/128"). config, drain and
// vip share the parsing and the host rule below; each adds its own checks
// and words on top.

// ParseAddrOrPrefix reads "ADDR" as ADDR's host prefix (/32 for IPv4, /128
// for IPv6) and "ADDR/BITS" as that prefix, whatever BITS is: IsHost tells
// whether it names a single address. An address's zone is dropped. Errors
// are netip's.
func ParseAddrOrPrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// IsHost reports whether p is valid and names a single address: a /32 for
// IPv4, a /128 for IPv6 (an IPv4-mapped IPv6 address included).
func IsHost(p netip.Prefix) bool {
	return p.IsValid() && p.Bits() == p.Addr().BitLen()
}

// ParseHostPrefix is ParseAddrOrPrefix for a single address only: a prefix
// that IsHost rejects is an error naming s.
func ParseHostPrefix(s string) (netip.Prefix, error) {
	p, err := ParseAddrOrPrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if !IsHost(p) {
		return netip.Prefix{}, fmt.Errorf("%q is not a host prefix", s)
	}
	return p, nil
}
