package confirm

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/router"
)

// vipLogExamples is how many VIPs a grouped log line names.
const vipLogExamples = 3

// vipLog gathers the per-VIP news of one confirmation, so that a condition
// many VIPs share (a BGP session down, BIRD's direct protocol disabled) is
// one log line, not one per VIP: VIPs that start to disagree are grouped by
// their expectation and problem, VIPs that agree again form one group.
type vipLog struct {
	disagree []*vipGroup // in the order their first VIP came
	byKey    map[string]*vipGroup
	agree    vipGroup
	stuck    vipGroup // renewed MaxRenewals times, and BIRD still disagrees
}

// vipGroup is VIPs with the same news.
type vipGroup struct {
	expected router.Expectation
	problem  string
	vips     []netip.Prefix
	longest  time.Duration // the longest disagreement among them
}

func (g *vipGroup) add(p netip.Prefix, d time.Duration) {
	g.vips = append(g.vips, p)
	g.longest = max(g.longest, d)
}

// note files what Step said of the VIP of r.
func (l *vipLog) note(r router.VIPReport, a Action) {
	switch a.Note {
	case Disagrees:
		l.disagrees(r, a.For)
	case AgreesAgain:
		l.agrees(r, a.For)
	}
	if a.Renewal == GiveUp {
		l.renewalsFailed(r)
	}
}

// disagrees notes a VIP that has disagreed with BIRD for d, past the grace.
func (l *vipLog) disagrees(r router.VIPReport, d time.Duration) {
	key := string(r.Expected) + "\x00" + r.Problem
	g := l.byKey[key]
	if g == nil {
		if l.byKey == nil {
			l.byKey = map[string]*vipGroup{}
		}
		g = &vipGroup{expected: r.Expected, problem: r.Problem}
		l.byKey[key] = g
		l.disagree = append(l.disagree, g)
	}
	g.add(r.Prefix, d)
}

// renewalsFailed notes a VIP whose renewals ran out.
func (l *vipLog) renewalsFailed(r router.VIPReport) {
	l.stuck.add(r.Prefix, 0)
}

// agrees notes a VIP that was reported disagreeing and agrees now, after a
// disagreement of d.
func (l *vipLog) agrees(r router.VIPReport, d time.Duration) {
	l.agree.add(r.Prefix, d)
	if len(l.agree.vips) == 1 {
		l.agree.expected = r.Expected
	} else if l.agree.expected != r.Expected {
		l.agree.expected = ""
	}
}

// flush writes one line per group: an error per problem, a warning for the
// VIPs that agree again.
func (l *vipLog) flush(log logrus.FieldLogger) {
	for _, g := range l.disagree {
		g.entry(log).WithFields(logrus.Fields{"problem": g.problem, "for": g.longest.Round(time.Millisecond)}).
			Error("BIRD disagrees with the interface")
	}
	if len(l.agree.vips) > 0 {
		l.agree.entry(log).WithField("after", l.agree.longest.Round(time.Millisecond)).Warn("BIRD agrees now")
	}
	if len(l.stuck.vips) > 0 {
		l.stuck.entry(log).Errorf("BIRD still does not see these addresses as the interface holds them after %d renewals each: "+
			"not a missed notification; check BIRD's direct protocol (its interface pattern and table); "+
			"rhi stops renewing them until they change", MaxRenewals)
	}
}

// entry names the group's VIPs: one VIP as before, more as a count and the
// first few.
func (g *vipGroup) entry(log logrus.FieldLogger) logrus.FieldLogger {
	f := logrus.Fields{}
	if g.expected != "" {
		f["expected"] = string(g.expected)
	}
	if len(g.vips) == 1 {
		f["vip"] = g.vips[0].String()
		return log.WithFields(f)
	}
	names := make([]string, 0, vipLogExamples)
	for _, p := range g.vips[:min(len(g.vips), vipLogExamples)] {
		names = append(names, p.String())
	}
	list := strings.Join(names, ", ")
	if n := len(g.vips) - len(names); n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	f["vip"] = list
	f["vips"] = len(g.vips)
	return log.WithFields(f)
}
