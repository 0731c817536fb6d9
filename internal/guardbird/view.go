package guardbird

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// View is one round's answer: for each VIP asked, which other sites serve
// it, as the guard tables show them.
type View struct {
	// At is when the round ended. Read leaves it zero; Viewer.View sets it
	// from its clock (the daemon's).
	At time.Time
	// Err is set when the round as a whole is unknown: BIRD could not be
	// asked, this site's identity could not be read, or no family asked
	// could be trusted (no eligible session, or an Established one without
	// ADD-PATH receive). Every VIP is then unknown, whatever the maps hold.
	Err error
	// Self is the site identity the round took as this site's: the
	// configured site_id, or BIRD's router id as a number; 0 if unknown.
	Self uint32
	// Serving maps each VIP asked and answered to the distinct site
	// identities, ascending, of the OTHER sites that announce it with a
	// serving path (neither GRACEFUL_SHUTDOWN nor the last-resort mark).
	// Empty: no other site serves it.
	Serving map[netip.Prefix][]uint32
	// Unknown maps each VIP asked whose paths could not be read or
	// attributed to why. A VIP in neither map is unknown too.
	Unknown map[netip.Prefix]error
}

// Sites returns the other sites serving p and whether the view knows them:
// false when the round, or p, is unknown.
func (v View) Sites(p netip.Prefix) ([]uint32, bool) {
	if v.Err != nil {
		return nil, false
	}
	if _, bad := v.Unknown[p]; bad {
		return nil, false
	}
	s, ok := v.Serving[p]
	return s, ok
}

// DumpCommand lists every route of a guard table with its attributes: one
// command per table and round, whatever the number of VIPs.
func DumpCommand(table string) string {
	return "show route table " + table + " all"
}

// Commands of a round besides the dumps.
const (
	protocolsCommand = "show protocols all"
	statusCommand    = "show status"
)

// Viewer reads rounds from BIRD at Path. Timeout bounds each exchange (0:
// only ctx). SiteID is this site's identity (config site_id); 0 reads
// BIRD's router id each round.
type Viewer struct {
	Path    string
	Timeout time.Duration
	SiteID  uint32
	// Now is the clock that stamps View.At; nil: time.Now.
	Now func() time.Time

	// watch, in tests, sees every exchange between its deadline and the
	// connection; nil: nothing does.
	watch func(Execer) Execer
}

// Bounds of the guard's replies. A dump lists every route of a guard
// table: this host's own VIP route and one path per other site and
// neighbour. The bounds leave room for 16 paths per VIP asked (BIRD 2
// prints about 8 lines of 30 bytes per BGP path), and never less than
// package bird's defaults; the import limit of tiers.conf (100,000 routes
// per session) bounds what a neighbour can put in the table. A dump over
// the bound makes its family unknown, never "nobody".
const (
	linesPerVIP = 200
	bytesPerVIP = 16 << 10
)

func (s Viewer) dialer(vips int) bird.Dialer {
	return bird.Dialer{
		MaxReplyLines: max(bird.DefaultMaxReplyLines, linesPerVIP*vips),
		MaxReplyBytes: max(bird.DefaultMaxReplyBytes, bytesPerVIP*vips),
	}
}

// View dials BIRD and reads one round for vips; ctx bounds the whole
// round. It is safe for concurrent use.
func (s Viewer) View(ctx context.Context, vips []netip.Prefix) View {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	dctx, cancel := bound(ctx, s.Timeout)
	conn, err := s.dialer(len(vips)).Dial(dctx, s.Path)
	cancel()
	if err != nil {
		return View{At: now(), Err: err}
	}
	defer conn.Close()
	var e Execer = conn
	if s.watch != nil {
		e = s.watch(e)
	}
	v := Read(ctx, timed{e, s.Timeout}, s.SiteID, vips)
	v.At = now()
	return v
}

func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// Read reads one round from e: "show protocols all", "show status" when
// self is 0, and one dump per guard table that a VIP asked lives in.
//
// A family is trusted only if at least one BGP session whose channel
// imports into its guard table is Established and negotiated ADD-PATH
// receive for it, and no Established one lacks it (its neighbour would
// send its best path only, and a site whose own path is best would hear of
// no other). An untrusted or unreadable family makes its VIPs unknown; if
// no family asked is trusted, Err says why.
func Read(ctx context.Context, e Execer, self uint32, vips []netip.Prefix) View {
	v := View{Serving: make(map[netip.Prefix][]uint32, len(vips)), Unknown: map[netip.Prefix]error{}}
	if len(vips) == 0 {
		return v
	}
	r, err := e.Exec(ctx, protocolsCommand)
	if err != nil {
		v.Err = fmt.Errorf("%s: %w", protocolsCommand, err)
		return v
	}
	trust, err := Sessions(r)
	if err != nil {
		v.Err = err
		return v
	}
	if self == 0 {
		r, err := e.Exec(ctx, statusCommand)
		if err == nil {
			self, err = RouterSiteID(r)
		}
		if err != nil {
			v.Err = fmt.Errorf("this site's identity (site_id unset, so BIRD's router id): %s: %w", statusCommand, err)
			return v
		}
	}
	v.Self = self

	byTable := map[string][]netip.Prefix{}
	for _, p := range vips {
		byTable[Table(p)] = append(byTable[Table(p)], p.Masked())
	}
	var errs []error
	usable := 0
	for _, table := range []string{birdconf.GuardTable4, birdconf.GuardTable6} {
		asked := byTable[table]
		if len(asked) == 0 {
			continue
		}
		if err := trust.check(table); err != nil {
			errs = append(errs, err)
			markUnknown(v.Unknown, asked, err)
			continue
		}
		r, err := e.Exec(ctx, DumpCommand(table))
		if err != nil && !isNotFound(err) {
			err = fmt.Errorf("%s: %w", DumpCommand(table), err)
			errs = append(errs, err)
			markUnknown(v.Unknown, asked, err)
			if !isBirdError(err) { // the connection is out of step, or ctx ended
				break
			}
			continue
		}
		usable++
		judge(r, table, self, trust.bgp, asked, &v)
	}
	for _, p := range vips {
		p = p.Masked()
		if _, ok := v.Serving[p]; !ok {
			if _, ok := v.Unknown[p]; !ok {
				v.Unknown[p] = errors.New("not answered in this round")
			}
		}
	}
	if usable == 0 {
		v.Err = errors.Join(errs...)
	}
	return v
}

func markUnknown(m map[netip.Prefix]error, ps []netip.Prefix, err error) {
	for _, p := range ps {
		m[p] = err
	}
}

func isNotFound(err error) bool {
	var be *bird.Error
	return errors.As(err, &be) && be.Code == bird.CodeNetworkNotFound
}

// judge reads one guard table's dump and fills v for the VIPs asked of it.
// The dump is cut into one group of lines per net, each parsed on its own
// (package bird's ParsePaths), so that a net BIRD prints in a way the
// parser cannot read (an AS path cut with "...", say) makes that net
// unknown and the rest of the round goes on. A group whose net cannot be
// read at all could be any VIP's: then every VIP of the table that the
// dump does not otherwise show is unknown, not "nobody".
func judge(r bird.Reply, table string, self uint32, bgp map[string]bool, asked []netip.Prefix, v *View) {
	want := make(map[netip.Prefix]bool, len(asked))
	for _, p := range asked {
		want[p] = true
	}
	seen := make(map[netip.Prefix]bool, len(asked))
	var blind error // why a group's net could not be read
	end := bird.Line{Code: bird.CodeOK}
	if n := len(r.Lines); n > 0 && r.Lines[n-1].Code == r.Code {
		end = r.Lines[n-1]
	}
	if r.Code != bird.CodeOK && r.Code != bird.CodeNetworkNotFound {
		blind = fmt.Errorf("%s: unexpected end code %04d", DumpCommand(table), r.Code)
	}
	lines := r.Lines
	if len(lines) > 0 && lines[len(lines)-1].Code == r.Code {
		lines = lines[:len(lines)-1]
	}
	for start := 0; start < len(lines) && blind == nil; {
		l := lines[start]
		if l.Code == codeRoute && strings.HasPrefix(l.Text, "Table ") && strings.HasSuffix(l.Text, ":") {
			if got := strings.TrimSuffix(strings.TrimPrefix(l.Text, "Table "), ":"); got != table {
				blind = fmt.Errorf("%s: the reply lists table %q", DumpCommand(table), got)
			}
			start++
			continue
		}
		stop := start + 1
		for stop < len(lines) && !startsNet(lines[stop]) {
			stop++
		}
		group := lines[start:stop]
		start = stop
		net, err := groupNet(group)
		if err != nil {
			blind = fmt.Errorf("%s: %w", DumpCommand(table), err)
			break
		}
		if !want[net] {
			continue
		}
		seen[net] = true
		sites, err := serving(group, end, self, bgp)
		if err != nil {
			v.Unknown[net] = fmt.Errorf("%s in %s: %w", net, table, err)
			continue
		}
		v.Serving[net] = sites
	}
	for _, p := range asked {
		if seen[p] {
			continue
		}
		if blind != nil {
			v.Unknown[p] = blind
			continue
		}
		v.Serving[p] = []uint32{} // no route of another site: nobody
	}
}

// codeRoute is BIRD's reply code of route lines and table headers.
const codeRoute = 1007

// startsNet reports whether l begins the routes of another net: a route
// line with the net in its first column (later routes of the same net leave
// it blank) or a table header.
func startsNet(l bird.Line) bool {
	if l.Code != codeRoute || l.Text == "" {
		return false
	}
	c := l.Text[0]
	return c != ' ' && c != '\t'
}

// groupNet reads the net of a group's first line.
func groupNet(group []bird.Line) (netip.Prefix, error) {
	word, _, _ := strings.Cut(group[0].Text, " ")
	p, err := netip.ParsePrefix(word)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("line %q: no net: %w", truncate(group[0].Text), err)
	}
	return p.Masked(), nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// serving judges one net's routes: the distinct identities of the other
// sites with a serving path. Routes of this host's own direct protocols
// (copied in by the pipe) do not count; a BGP path tagged with this site's
// own identity (echoed back by a router) is not another site. A route
// without a source, a BGP path without an AS path (a format this parser does
// not know) or with no site identity, or with two, cannot be attributed; a
// route that is neither BGP nor this host's own cannot be explained: any of
// them makes the net unknown.
func serving(group []bird.Line, end bird.Line, self uint32, bgp map[string]bool) ([]uint32, error) {
	lines := make([]bird.Line, 0, len(group)+1)
	lines = append(lines, group...)
	lines = append(lines, end)
	paths, err := bird.ParsePaths(bird.Reply{Lines: lines, Code: end.Code})
	if err != nil {
		return nil, err
	}
	out := []uint32{}
	for _, p := range paths {
		// The dump asks for "all": every route states its source, and every
		// BGP route its AS path (empty for iBGP). Without them the reply is
		// in a format this parser does not know, and the net is unknown.
		if p.Source == "" {
			return nil, fmt.Errorf("a route of protocol %q with no source (neither BIRD 2's \"Type:\" nor BIRD 3's \"source:\"): %w", p.Proto, bird.ErrUnreadable)
		}
		isBGP := strings.HasPrefix(p.Source, "BGP") || bgp[p.Proto]
		if isBGP && !p.HasASPath {
			return nil, fmt.Errorf("a path from %s with no AS path (neither BIRD 2's BGP.as_path nor BIRD 3's bgp_path): %w", p.Proto, bird.ErrUnreadable)
		}
		if !isBGP {
			if own[p.Proto] {
				continue
			}
			return nil, fmt.Errorf("a route of protocol %q, neither BGP nor this host's", p.Proto)
		}
		var ids []uint32
		lastResort := slices.Contains(p.Communities, gracefulShutdown)
		for _, c := range p.LargeCommunities {
			switch {
			case c[1] == birdconf.SiteData1 && !slices.Contains(ids, c[2]):
				ids = append(ids, c[2])
			case c[1] == birdconf.TierData1 && c[2] == birdconf.LastResortData2:
				lastResort = true
			}
		}
		switch {
		case len(ids) == 0:
			return nil, fmt.Errorf("a path from %s carries no site identity (AS, %d, id)", p.Proto, birdconf.SiteData1)
		case len(ids) > 1:
			return nil, fmt.Errorf("a path from %s carries %d site identities %v", p.Proto, len(ids), ids)
		case ids[0] == self || lastResort || slices.Contains(out, ids[0]):
			continue
		}
		out = append(out, ids[0])
	}
	slices.Sort(out)
	return out, nil
}

// gracefulShutdown is the well-known community (65535, 0).
var gracefulShutdown = bird.Community{birdconf.GracefulShutdownAS, birdconf.GracefulShutdownValue}

// own names the direct protocols whose routes the pipes copy into the
// guard tables: this host's own VIPs.
var own = map[string]bool{
	birdconf.FullProtocol:       true,
	birdconf.DegradedProtocol:   true,
	birdconf.LastResortProtocol: true,
}
