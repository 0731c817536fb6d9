package config

import (
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// FailOpen is the fail_open section: the guard that keeps a VIP whose
// health fails announced in the last-resort tier until enough other sites
// serve it (docs/semantics.md, "Fail-open guard").
type FailOpen struct {
	// MinOtherSites is how many other sites must announce a VIP with a
	// serving path (not last resort), as this host's BIRD learns them in
	// its guard table, for rhi to withdraw it; 0 turns the guard off.
	MinOtherSites int `yaml:"min_other_sites"`
	// Hold is how long, between two answers of BIRD at least, every
	// answer must have shown MinOtherSites serving other sites before a
	// VIP whose health fails is withdrawn rather than kept in last resort.
	Hold time.Duration `yaml:"hold"`
}

// Enabled reports whether the guard is on.
func (f FailOpen) Enabled() bool { return f.MinOtherSites > 0 }

// MaxMinOtherSites bounds fail_open.min_other_sites: more sites than any
// anycast fleet has is a typo, and the guard would engage for ever.
const MaxMinOtherSites = 1000

func defaultFailOpen() FailOpen {
	return FailOpen{Hold: 2 * time.Second}
}

// failOpenKeys are the keys of fail_open. "release" is read only to warn
// that it is no longer used: the guard that let go after it is gone, and
// a file written for it must still start rhi after an upgrade.
var failOpenKeys = []string{"min_other_sites", "hold", "release"}

func (p *parser) failOpen(n *yaml.Node, c *Config) {
	const path = "fail_open"
	f := &c.FailOpen
	m, _ := p.mapping(n, path, failOpenKeys...)
	set(p, m["min_other_sites"], path+".min_other_sites", &f.MinOtherSites, parseSites)
	set(p, m["hold"], path+".hold", &f.Hold, parseDuration)
	var release time.Duration
	if set(p, m["release"], path+".release", &release, parseDuration) {
		c.Deprecated = append(c.Deprecated, Problem{File: p.file, Line: m["release"].Line, Path: path + ".release",
			Msg: "no longer used, ignored: a VIP whose health fails stays in the last-resort tier until min_other_sites other sites serve it for hold; delete the key",
			Got: m["release"].Value}.String())
	}
}

// parseSites reads fail_open.min_other_sites: 0 (off) to MaxMinOtherSites.
func parseSites(s string) (int, issue) {
	allowed := "0 (off) to " + strconv.Itoa(MaxMinOtherSites)
	if s == "" {
		return 0, issue{msg: "empty value", allowed: allowed}
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, issue{msg: "not a whole number", allowed: allowed}
	case n < 0 || n > MaxMinOtherSites:
		return 0, issue{msg: "out of range", allowed: allowed}
	}
	return n, issue{}
}
