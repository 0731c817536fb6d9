// Package bird holds the BIRD configuration rhi ships (for BIRD 2 from 2.0.8,
// or BIRD 3), so that the labs render their per-host files around the very
// files an operator installs.
//
// Its name is its directory's. Code that also imports the BIRD
// control-socket client (package bird in bird/) names this one birdconf:
//
//	import birdconf "github.com/rhi-daemon/rhi/deploy/bird"
//
// An ADC host's bird.conf sets its router id, includes adc.conf and declares
// its BGP sessions from the templates adc.conf defines. adc.conf clashes with
// nothing a host's own bird.conf defines; the device and kernel protocols
// with rhi's settings are in base.conf, for a bird.conf that has none (as in
// the labs and examples/bird.conf). The lab's router includes peer.conf.
package bird

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"net/netip"
)

//go:embed adc.conf
var adc string

//go:embed base.conf
var base string

//go:embed peer.conf
var peer string

//go:embed tiers.conf
var tiers string

// InstallDir is where the Debian package installs adc.conf and base.conf;
// examples/bird.conf includes them from there.
const InstallDir = "/usr/share/rhi/bird"

// ADC returns adc.conf: the direct protocol on rhi0, the export filter
// rhi_vips (host routes from rhi0 only) and the templates rhi_peer4 and
// rhi_peer6 whose sessions export through it.
func ADC() string { return adc }

// Base returns base.conf: the device protocol with a 5 s scan and a kernel
// protocol that only sets the 8 MiB netlink receive buffer.
func Base() string { return base }

// Peer returns peer.conf: the lab router's kernel export and the templates
// rhi_adc4 and rhi_adc6 whose sessions import everything and export nothing.
func Peer() string { return peer }

// Tiers returns tiers.conf: adc.conf's names (rhi_direct, rhi_vips,
// rhi_peer4, rhi_peer6) plus the ladder's lower tiers (direct protocols
// rhi_degraded on rhi1 and rhi_lastresort on rhi2, exported with the
// attributes below), the site identity every exported VIP route carries,
// and the fail-open guard's tables rhi_guard4 and rhi_guard6. It needs the
// defines that Defines.String writes before it.
func Tiers() string { return tiers }

// Names that tiers.conf defines, and that rhi asks BIRD about.
const (
	GuardTable4 = "rhi_guard4"
	GuardTable6 = "rhi_guard6"

	FullProtocol        = "rhi_direct"
	FullInterface       = "rhi0"
	DegradedProtocol    = "rhi_degraded"
	DegradedInterface   = "rhi1"
	LastResortProtocol  = "rhi_lastresort"
	LastResortInterface = "rhi2"
)

// The marks tiers.conf puts on an exported VIP route. Its large communities
// are (RHI_AS, Data1, Data2): the first part is the exporting site's AS.
const (
	// TierData1 is the second part of a tier community: (RHI_AS, 1, x).
	TierData1 = 1
	// DegradedData2 marks a degraded route: (RHI_AS, 1, 1).
	DegradedData2 = 1
	// LastResortData2 marks a last-resort route: (RHI_AS, 1, 2).
	LastResortData2 = 2
	// SiteData1 is the second part of the site identity every exported
	// route carries: (RHI_AS, 2, RHI_SITE_ID).
	SiteData1 = 2

	// GracefulShutdownAS and GracefulShutdownValue make the well-known
	// community GRACEFUL_SHUTDOWN (65535, 0) of RFC 8326, which a
	// last-resort route carries.
	GracefulShutdownAS    = 65535
	GracefulShutdownValue = 0
	// LastResortPrepend is how many more copies of RHI_AS a last-resort
	// route's AS path carries (the most a degraded one may).
	LastResortPrepend = 8
	// MaxDegradedPrepend bounds RHI_DEGRADED_PREPEND (1 to 8).
	MaxDegradedPrepend = 8

	// DegradedCommunityData1 and DegradedCommunityData2 are the degraded
	// mark's second and third parts, (RHI_AS, 1, 1): TierData1 and
	// DegradedData2 under their older names.
	DegradedCommunityData1 = TierData1
	DegradedCommunityData2 = DegradedData2
)

// Defines are the five symbols tiers.conf needs before its include.
type Defines struct {
	AS     uint32 // RHI_AS: the AS of the host's sessions
	SiteID uint32 // RHI_SITE_ID: the site's identity, rhi's site_id; 1 or more
	// DegradedPrepend is RHI_DEGRADED_PREPEND: the extra copies of AS on a
	// degraded route, 1 to 8.
	DegradedPrepend int
	// Guard4 and Guard6 are RHI_GUARD4 and RHI_GUARD6: the VIP ranges whose
	// host routes the guard keeps, in BIRD's prefix-set syntax without the
	// brackets, e.g. "10.0.0.0/8{32,32}" and "fd00::/8{128,128}".
	Guard4, Guard6 string
}

// String writes the defines, one a line, for a host file to put before its
// include of tiers.conf.
func (d Defines) String() string {
	return fmt.Sprintf("define RHI_AS = %d;\ndefine RHI_SITE_ID = %d;\ndefine RHI_DEGRADED_PREPEND = %d;\ndefine RHI_GUARD4 = [ %s ];\ndefine RHI_GUARD6 = [ %s ];\n",
		d.AS, d.SiteID, d.DegradedPrepend, d.Guard4, d.Guard6)
}

// SiteID returns the site identity that an IPv4 router id stands for, the
// number RHI_SITE_ID takes when rhi's site_id is left to default: a.b.c.d is
// a*2^24 + b*2^16 + c*2^8 + d. 0.0.0.0 and non-IPv4 addresses have none.
func SiteID(routerID netip.Addr) (uint32, error) {
	if !routerID.Is4() {
		return 0, fmt.Errorf("router id %q: not an IPv4 address", routerID)
	}
	b := routerID.As4()
	id := binary.BigEndian.Uint32(b[:])
	if id == 0 {
		return 0, fmt.Errorf("router id %q: 0 is no site identity", routerID)
	}
	return id, nil
}
