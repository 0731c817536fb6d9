// Package bird holds the BIRD 2 configuration rhi ships, so that the labs
// render their per-host files around the very files an operator installs.
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

import _ "embed"

//go:embed adc.conf
var adc string

//go:embed base.conf
var base string

//go:embed peer.conf
var peer string

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
