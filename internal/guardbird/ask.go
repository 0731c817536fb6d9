// Package guardbird asks BIRD's guard tables (deploy/bird/tiers.conf's
// rhi_guard4 and rhi_guard6) which other sites announce each VIP, for the
// fail-open guard (package guard) and `rhi drain`'s warning.
package guardbird

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// Answer is one round of questions to BIRD.
type Answer struct {
	At time.Time // when the round ended
	// Err is set when BIRD could not be asked at all (dial, a broken
	// connection before any answer): every VIP is then unknown.
	Err error
	// Self is this site's AS, the "Local AS" of its BGP sessions when
	// they all agree; 0 if unknown.
	Self uint32
	// Origins maps each VIP BIRD answered for to the origin ASes of the
	// other sites' paths (bird.Announcers.Origins). A VIP missing from it
	// is unknown: BIRD failed for it, or the round ran out of time.
	Origins map[netip.Prefix][]uint32
	// Failed counts the VIPs asked about and not answered; VIPErr is the
	// first such error.
	Failed int
	VIPErr error
}

// Execer runs one command on BIRD's control socket (*bird.Conn).
type Execer interface {
	Exec(ctx context.Context, cmd string) (bird.Reply, error)
}

// Table is the guard table that holds p's family.
func Table(p netip.Prefix) string {
	if p.Addr().Is6() {
		return birdconf.GuardTable6
	}
	return birdconf.GuardTable4
}

// Socket asks BIRD at Path; each exchange is bounded by Timeout (0: none
// but ctx's).
type Socket struct {
	Path    string
	Timeout time.Duration

	// watch, in tests, sees every exchange between its deadline and the
	// connection; nil: nothing does.
	watch func(Execer) Execer
}

// Ask dials BIRD and asks about every VIP; ctx bounds the whole round.
func (s Socket) Ask(ctx context.Context, vips []netip.Prefix) Answer {
	dctx, cancel := s.bound(ctx)
	conn, err := bird.Dial(dctx, s.Path)
	cancel()
	if err != nil {
		return Answer{Err: err}
	}
	defer conn.Close()
	var e Execer = conn
	if s.watch != nil {
		e = s.watch(e)
	}
	return AskOn(ctx, timed{e, s.Timeout}, vips)
}

func (s Socket) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Timeout > 0 {
		return context.WithTimeout(ctx, s.Timeout)
	}
	return context.WithCancel(ctx)
}

// timed bounds each exchange.
type timed struct {
	c Execer
	d time.Duration
}

func (t timed) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	if t.d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.d)
		defer cancel()
	}
	return t.c.Exec(ctx, cmd)
}

// AskOn asks e about every VIP, one "show route <VIP> table <guard> all"
// each, and the sessions' local AS. A VIP whose reply BIRD refused or
// rhi could not read (bird.ErrUnreadable) is unknown, and the round goes
// on. It stops at the first error that leaves the connection unusable
// (the rest are unknown) and when ctx ends.
// A VIP of a family with no Established BGP session is unknown (not asked),
// and with none at all Err says so: an empty guard table then means that
// nothing fills it, not that no other site announces the VIP.
func AskOn(ctx context.Context, e Execer, vips []netip.Prefix) Answer {
	a := Answer{Origins: make(map[netip.Prefix][]uint32, len(vips))}
	r, err := e.Exec(ctx, "show protocols all")
	if err != nil {
		// Without it no session is known to fill the guard tables.
		return Answer{Err: fmt.Errorf("show protocols all: %w", err)}
	}
	a.Self = LocalAS(r)
	up := sessionsUp(r)
	if len(up) == 0 {
		return Answer{Err: errNoSession}
	}
	for i, p := range vips {
		table := Table(p)
		if !up[bird.Family(p)] {
			// Nothing can fill the guard table: its emptiness says
			// nothing about the other sites.
			a.Failed++
			if a.VIPErr == nil {
				a.VIPErr = fmt.Errorf("%s: no %s BGP session is established", table, bird.Family(p))
			}
			continue
		}
		r, err := e.Exec(ctx, bird.GuardCommand(p, table))
		an, err := bird.ParseAnnouncers(r, err, p, table)
		if err != nil {
			a.Failed++
			if a.VIPErr == nil {
				a.VIPErr = fmt.Errorf("%s: %w", bird.GuardCommand(p, table), err)
			}
			// BIRD's own error and a reply it could not read leave the
			// connection usable: only that VIP is unknown. Anything else
			// means the connection is out of step, or ctx ended.
			if !isBirdError(err) && !errors.Is(err, bird.ErrUnreadable) {
				a.Failed += len(vips) - i - 1
				break
			}
			continue
		}
		a.Origins[p] = an.Origins
	}
	return a
}

// errNoSession is the Answer.Err of a BIRD with no BGP session
// Established: the guard tables are empty because nothing fills them.
var errNoSession = errors.New("no BGP session is established: the guard tables cannot know which other sites announce a VIP")

// sessionsUp reads "show protocols all": the families ("ipv4", "ipv6") for
// which some BGP protocol is Established with that channel UP. While a
// family has none, its guard table is empty or stale whatever the other
// sites announce. An unreadable reply has none.
func sessionsUp(r bird.Reply) map[string]bool {
	ps, err := bird.ParseProtocolsAll(r)
	if err != nil {
		return nil
	}
	up := map[string]bool{}
	for _, p := range ps {
		if p.Proto != "BGP" || !p.Established() {
			continue
		}
		for _, c := range p.Channels {
			if c.State == "UP" {
				up[c.Name] = true
			}
		}
	}
	return up
}

// isBirdError reports whether err is BIRD's own error reply, after which
// the connection stays usable.
func isBirdError(err error) bool {
	var be *bird.Error
	return errors.As(err, &be)
}

// LocalAS reads the "Local AS:" lines of "show protocols all": the AS
// when every BGP protocol has the same, else 0.
func LocalAS(r bird.Reply) uint32 {
	var as uint32
	for _, l := range r.Lines {
		v, ok := strings.CutPrefix(strings.TrimSpace(l.Text), "Local AS:")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil || n == 0 || (as != 0 && uint32(n) != as) {
			return 0
		}
		as = uint32(n)
	}
	return as
}
