package config

import (
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// FailOpen is the fail_open section: the guard that keeps a VIP announced
// when health would withdraw it and too few other sites announce it
// (docs/semantics.md, "Fail-open guard").
type FailOpen struct {
	// MinOtherSites is how many other sites must announce a VIP, as this
	// host's BIRD learns them in its guard table, for rhi to withdraw it;
	// 0 turns the guard off.
	MinOtherSites int `yaml:"min_other_sites"`
	// Hold is how long fewer than MinOtherSites must be seen before the
	// guard engages.
	Hold time.Duration `yaml:"hold"`
	// Release is how long at least MinOtherSites must be seen, without a
	// break, before an engaged guard lets go.
	Release time.Duration `yaml:"release"`
}

// Enabled reports whether the guard is on.
func (f FailOpen) Enabled() bool { return f.MinOtherSites > 0 }

// MaxMinOtherSites bounds fail_open.min_other_sites: more sites than any
// anycast fleet has is a typo, and the guard would engage for ever.
const MaxMinOtherSites = 1000

func defaultFailOpen() FailOpen {
	return FailOpen{Hold: 2 * time.Second, Release: 30 * time.Second}
}

var failOpenKeys = []string{"min_other_sites", "hold", "release"}

func (p *parser) failOpen(n *yaml.Node, f *FailOpen) {
	const path = "fail_open"
	m, _ := p.mapping(n, path, failOpenKeys...)
	set(p, m["min_other_sites"], path+".min_other_sites", &f.MinOtherSites, parseSites)
	set(p, m["hold"], path+".hold", &f.Hold, parseDuration)
	set(p, m["release"], path+".release", &f.Release, parseDuration)
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
