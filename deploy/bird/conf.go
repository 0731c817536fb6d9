// Package birdconf holds the BIRD 2 configuration rhi ships, so that the labs
// render their per-host files around the very files an operator installs.
//
// The directory is deploy/bird; the package is named birdconf so that it does
// not read like the BIRD control-socket client in bird/.
//
// Each host's bird.conf sets its router id, includes adc.conf (ADC hosts) or
// peer.conf (the lab's router) and declares its BGP sessions from the
// templates those files define; examples/ shows both shapes.
package birdconf

import _ "embed"

//go:embed adc.conf
var adc string

//go:embed peer.conf
var peer string

// ADC returns adc.conf: the device scan time, the netlink receive buffer, the
// direct protocol on rhi0 and the templates rhi_peer4 and rhi_peer6 whose
// sessions export only the VIPs.
func ADC() string { return adc }

// Peer returns peer.conf: the lab router's kernel export and the templates
// rhi_adc4 and rhi_adc6 whose sessions import everything and export nothing.
func Peer() string { return peer }
