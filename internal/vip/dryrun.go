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
}

// NewDryRun returns a read-only stand-in for New(nl, iface, log).
func NewDryRun(nl Netlink, iface string, log logrus.FieldLogger) *DryRun {
	return &DryRun{a: New(nl, iface, log), log: log}
}

// Observe reads the interface.
func (d *DryRun) Observe(ctx context.Context) (State, error) { return d.a.Observe(ctx) }

// Set reports the interface as it is and logs what it would add and delete.
func (d *DryRun) Set(ctx context.Context, owned map[netip.Prefix]bool) (State, error) {
	seen, err := d.a.Observe(ctx)
	if err != nil {
		return State{}, err
	}
	st := State{Exists: seen.Exists, Up: seen.Up, LowerUp: seen.LowerUp, Foreign: slices.Clone(seen.Foreign), ForeignPeers: seen.ForeignPeers}
	var add, del []string
	for _, p := range seen.Present {
		if _, ok := owned[p]; ok {
			st.Present = append(st.Present, p)
		} else {
			st.Foreign = append(st.Foreign, p)
		}
	}
	for p, want := range owned {
		switch have := seen.Has(p); {
		case want && !have:
			add = append(add, p.String())
		case !want && have:
			del = append(del, p.String())
		}
	}
	slices.SortFunc(st.Foreign, netip.Prefix.Compare)
	slices.Sort(add)
	slices.Sort(del)
	plan := fmt.Sprintf("add [%s] delete [%s]", strings.Join(add, " "), strings.Join(del, " "))
	if plan != d.last {
		d.last = plan
		if len(add)+len(del) == 0 {
			d.log.WithField("iface", d.a.iface).Info("dry run: the interface is as wanted; nothing to change")
		} else {
			d.log.WithFields(logrus.Fields{"iface": d.a.iface, "would_add": strings.Join(add, " "), "would_delete": strings.Join(del, " ")}).Warn("dry run: not changing the interface")
		}
	}
	return st, nil
}

// Renew logs the renewal it would do.
func (d *DryRun) Renew(ctx context.Context, p netip.Prefix, present bool) error {
	d.log.WithFields(logrus.Fields{"vip": p.String(), "iface": d.a.iface}).Info("dry run: would renew the address for BIRD")
	return nil
}
