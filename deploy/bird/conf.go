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
	"fmt"
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
// rhi_peer4, rhi_peer6) plus the degraded tier (direct protocol
// rhi_degraded on rhi1, exported with RHI_AS prepended
// RHI_DEGRADED_PREPEND times and the large community (RHI_AS, 1, 1)) and
// the fail-open guard's tables rhi_guard4 and rhi_guard6. It needs the
// defines that TiersDefines writes before it.
func Tiers() string { return tiers }

// Guard tables and the degraded tier's names, as tiers.conf defines them.
const (
	GuardTable4       = "rhi_guard4"
	GuardTable6       = "rhi_guard6"
	DegradedProtocol  = "rhi_degraded"
	DegradedInterface = "rhi1"
	// DegradedCommunity is the large community's second and third parts;
	// the first is the host's AS: (RHI_AS, 1, 1).
	DegradedCommunityData1 = 1
	DegradedCommunityData2 = 1
)

// TiersDefines returns the defines tiers.conf needs, for a host file to put
// before its include: the host's AS, the number of extra copies of it on a
// degraded route (1 to 8), and the VIP ranges whose host routes the guard
// keeps, in BIRD's prefix-set syntax without the brackets, e.g.
// "10.0.0.0/8{32,32}" and "fd00::/8{128,128}".
func TiersDefines(as uint32, prepend int, guard4, guard6 string) string {
	return fmt.Sprintf("define RHI_AS = %d;\ndefine RHI_DEGRADED_PREPEND = %d;\ndefine RHI_GUARD4 = [ %s ];\ndefine RHI_GUARD6 = [ %s ];\n",
		as, prepend, guard4, guard6)
}
