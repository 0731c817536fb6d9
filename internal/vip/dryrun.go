package vip

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
)

// DryRun reads the interface as an Announcer does and logs what Set would
// change, without changing anything (`rhi run --dry-run`). A plan is logged
// once, and again only when it changes, so a dry run can be left running.
type DryRun struct {
	a    *Announcer
	log  logrus.FieldLogger
	last string
	// lastPeers is the point-to-point list DeletePeers last logged.
	lastPeers string
}

// NewDryRun returns a read-only stand-in for New(nl, iface, log).
func NewDryRun(nl Netlink, iface string, log logrus.FieldLogger) *DryRun {
	return &DryRun{a: New(nl, iface, log), log: log}
}

// Observe reads the interface.
func (d *DryRun) Observe(ctx context.Context) (State, error) { return d.a.Observe(ctx) }

// Set reports the interface as it is and logs what Set would add and
// delete: the writes of the same plan. A VIP Set would refuse (not a host
// prefix, or an IPv6 address the interface holds otherwise) is in neither
// list, and unlike Set, DryRun.Set returns no error for it.
func (d *DryRun) Set(ctx context.Context, want Desired) (State, error) {
	r, err := d.a.read(ctx)
	if err != nil {
		return State{}, err
	}
	if err := want.check(); err != nil {
		return State{}, fmt.Errorf("set on %q: %w", d.a.iface, err)
	}
	c := plan(d.a.iface, d.a.set(r.list), r.peers, want, nil)
	st := State{Exists: true, Up: r.up, LowerUp: r.lowerUp, Foreign: c.foreign, ForeignPeers: sortedPeers(r.peers)}
	for _, s := range c.sightings { // every owned VIP: there is no previous Set
		if s.present {
			st.Present = append(st.Present, s.p)
		}
	}
	slices.SortFunc(st.Present, netip.Prefix.Compare) // sightings: want.Present's, then want.Absent's
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	d.logPlan(names(c.adds), names(c.dels))
	return st, nil
}

// logPlan logs a plan once, and again only when it changes.
func (d *DryRun) logPlan(add, del []string) {
	plan := fmt.Sprintf("add [%s] delete [%s]", strings.Join(add, " "), strings.Join(del, " "))
	if plan == d.last {
		return
	}
	d.last = plan
	if len(add)+len(del) == 0 {
		d.log.WithField("iface", d.a.iface).Info("dry run: the interface is as wanted; nothing to change")
		return
	}
	d.log.WithFields(logrus.Fields{"iface": d.a.iface, "would_add": strings.Join(add, " "), "would_delete": strings.Join(del, " ")}).Warn("dry run: not changing the interface")
}

// names returns the prefixes of ops as text, sorted as text.
func names(ops []op) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.p.String()
	}
	slices.Sort(out)
	return out
}

// Renew logs the renewal it would do.
func (d *DryRun) Renew(ctx context.Context, p netip.Prefix, present bool) error {
	d.log.WithFields(logrus.Fields{"vip": p.String(), "iface": d.a.iface}).Info("dry run: would renew the address for BIRD")
	return nil
}

// DeletePeers logs the point-to-point entries it would delete, once per
// change of the list.
func (d *DryRun) DeletePeers(ctx context.Context, peers []Peer) error {
	text := fmt.Sprint(peers)
	if text == d.lastPeers {
		return nil
	}
	d.lastPeers = text
	d.log.WithFields(logrus.Fields{"iface": d.a.iface, "would_delete_peers": text}).Warn("dry run: not deleting unmanaged point-to-point entries")
	return nil
}
