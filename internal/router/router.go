// Package router holds the words of the router seam: what rhi wants the
// routing daemon to export (Input: each VIP's Expectation and tier) and what
// a check of the routing daemon found (Report), with their renderings. It
// does no I/O: package verify checks BIRD against an Input, the daemon and
// package confirm hold BIRD to it, and `rhi verify` prints the Report.
package router

import (
	"net/netip"
	"time"
)

// Expectation is what rhi wants for a VIP.
type Expectation string

const (
	Present Expectation = "present" // announced: on the interface, exported
	Absent  Expectation = "absent"  // withdrawn: nowhere
	// Unmanaged is a host address on the interface that rhi does not
	// manage: nothing checks its health, so BIRD must not export it.
	Unmanaged Expectation = "unmanaged"
)

// VIP is one address to check, with what the caller wants and what the
// caller read from the interface.
type VIP struct {
	Prefix      netip.Prefix
	Expected    Expectation
	OnInterface bool
	// Tier, for a present VIP, is how the sessions must export it:
	// TierFull, TierDegraded, TierLastResort, or "" (not checked).
	Tier string
}

// Input is what a check of the router needs besides the router.
type Input struct {
	VIPs []VIP
	// Protocols are the BGP protocols that must be Established and carry
	// the VIPs (config bird.protocols); empty: every BGP protocol BIRD
	// reports.
	Protocols []string
	// ExchangeTimeout bounds each exchange with BIRD (config
	// bird.timeout); 0: only ctx bounds them.
	ExchangeTimeout time.Duration
	// SiteID is this site's identity (config site_id, else BIRD's router
	// id: verify.RouterSiteID). When set, each VIP whose tier is checked must be
	// exported with the large community (AS, 2, SiteID), deploy/bird's
	// RHI_SITE_ID; 0: not checked, unless SiteFromRouter.
	SiteID uint32
	// SiteFromRouter, with SiteID 0, asks BIRD for its router id ("show
	// status") and checks the site identity against it when some VIP's
	// tier is checked: config site_id's default.
	SiteFromRouter bool
}

// ProtocolState is a selected protocol as the router reports it.
type ProtocolState struct {
	Name        string `json:"name"`
	State       string `json:"state"`             // "up", "start", "down", …; "" if BIRD has no such protocol
	BGPState    string `json:"bgp_state"`         // "Established", "Active", …
	Info        string `json:"info,omitempty"`    // e.g. "Socket: Connection refused"
	Established bool   `json:"established"`       // asked about exports only when set
	Problem     string `json:"problem,omitempty"` // why it counts against consistency
}

// VIPReport is the verdict on one VIP.
type VIPReport struct {
	Prefix      netip.Prefix `json:"vip"`
	Expected    Expectation  `json:"expected"`
	OnInterface bool         `json:"on_interface"`
	// InTable: a table that a direct protocol's channel of the VIP's
	// family imports into holds the prefix from a direct protocol.
	InTable bool `json:"in_bird_table"`
	// DirectUp: BIRD has a Direct protocol that is up with an UP channel
	// of the VIP's family, so an address on the interface can enter
	// BIRD's table. When it is false a VIP missing from the table is
	// explained by BIRD's own state or config (a report Problem says
	// which family), not by a missed netlink notification: renewing the
	// address cannot help.
	DirectUp bool `json:"direct_up"`
	// Exported holds, per selected protocol that was asked, whether it
	// exports the VIP. Only Established protocols with a channel of the
	// VIP's family are asked.
	Exported map[string]bool `json:"exported"`
	Agrees   bool            `json:"agrees"`
	Problem  string          `json:"problem,omitempty"` // what disagrees, for people
	// Tier is the tier checked ("" when none is); ExportedTier holds, per
	// protocol that exports the VIP, the tier it exports it with.
	Tier         string            `json:"tier,omitempty"`
	ExportedTier map[string]string `json:"exported_tier,omitempty"`
}

// Report is the result of a check of the router.
type Report struct {
	Protocols []ProtocolState
	VIPs      []VIPReport
	// Problems are findings about the whole set, e.g. no BGP protocol at
	// all.
	Problems []string
	// Err is set when the check could not be made (socket, timeout, a
	// reply that does not parse). VIPs is then empty: nothing is claimed.
	// A caller that cannot even connect reports Report{Err: err}. After an
	// error the connection may be out of step: close it and dial again.
	Err error
}

// Exit codes of `rhi verify`.
const (
	ExitConsistent = 0 // every VIP agrees, every selected protocol Established
	ExitMismatch   = 1 // a VIP disagrees, or a selected protocol is not Established
	ExitUnchecked  = 2 // could not check
)

// ExitCode returns the `rhi verify` exit code for the report.
func (r Report) ExitCode() int {
	switch {
	case r.Err != nil:
		return ExitUnchecked
	case !r.Consistent():
		return ExitMismatch
	}
	return ExitConsistent
}

// Consistent reports whether BIRD agrees with everything: the check was
// made, it found no problem of the whole set, every selected protocol is
// Established and every VIP agrees (exit code ExitConsistent).
func (r Report) Consistent() bool {
	if len(r.Problems) > 0 {
		return false
	}
	for _, p := range r.Protocols {
		if p.Problem != "" {
			return false
		}
	}
	return r.VIPsAgree()
}

// VIPsAgree reports whether the check was made and every VIP agrees,
// whatever the sessions: withdrawn VIPs agree with a session that is down.
func (r Report) VIPsAgree() bool {
	if r.Err != nil {
		return false
	}
	for _, v := range r.VIPs {
		if !v.Agrees {
			return false
		}
	}
	return true
}

// The ladder of tiers. A present VIP whose Tier is set is also checked for
// how each session exports it, with the marks of deploy/bird/tiers.conf:
// none at full weight; the own AS prepended and the large community
// (AS, 1, 1) when degraded; GRACEFUL_SHUTDOWN (65535, 0), 8 copies of the
// own AS and (AS, 1, 2) in last resort. Over iBGP (templates rhi_ibgp4/6)
// the path stays empty and LOCAL_PREF ranks the tiers instead; an export
// with the tier's communities and an empty path is read as that. With
// Input.SiteID set, every tier must also carry the site identity
// (AS, 2, SiteID).
const (
	TierFull       = "announced"   // exported without the tier marks
	TierDegraded   = "degraded"    // exported with the degraded marks
	TierLastResort = "last_resort" // exported with the last-resort marks
)
