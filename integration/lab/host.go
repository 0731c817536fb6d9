package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rhi-daemon/rhi/bird"
)

// Router is one lab host running BIRD in its own network namespace: the peer
// router, or the routing side of an ADC host (see [DC]).
type Router struct {
	Name       string // "peer", "dc1", …
	NS         string // network namespace name
	Dir        string // the host's files: BIRD config, socket, log, process logs
	BirdConfig string
	BirdSocket string
	BirdLog    string
	ASN        uint32
	RouterID   netip.Addr

	lab      *Lab
	includes []string // shared files the host file includes, in order
	defines  string   // lines before the includes (tiers.conf's defines)
	sessions []session
}

// DC is an ADC host: BIRD announces the addresses on Iface to the peer.
type DC struct {
	*Router

	Iface     string // "rhi0", the ifb link standing in for production's dummy
	ADCIface  string // the ADC's end of its link to the router ("peer")
	PeerIface string // the router's end of that link (the DC's name)

	// Addresses on the link: the BGP session runs between them.
	ADCAddr4, ADCAddr6   netip.Addr
	PeerAddr4, PeerAddr6 netip.Addr

	Protocols  []string // the ADC's BGP protocols (rhi's bird.protocols)
	PeerProtos []string // the router's BGP protocols towards this ADC
}

// Exec returns a command that runs name inside the host's namespace. The
// caller runs it; ctx kills it as in [exec.CommandContext].
func (r *Router) Exec(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", r.NS, name}, args...)...)
}

// Run runs a short command inside the host's namespace and returns its
// combined output (at most 1 MiB). A failure's error includes the output.
// Without a deadline in ctx the command gets 30 s.
func (r *Router) Run(ctx context.Context, name string, args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, closeTime)
		defer cancel()
	}
	cmd := r.Exec(ctx, name, args...)
	out, err := combined(cmd)
	if err != nil {
		return out, fmt.Errorf("%s in %q: %w: %s", strings.Join(append([]string{name}, args...), " "), r.NS, err, strings.TrimSpace(out))
	}
	return out, nil
}

// birdTimeout bounds one exchange with BIRD, and one run of birdc.
const birdTimeout = 5 * time.Second

// Query sends one read-only command to the host's BIRD through package
// bird's client, on a connection restricted to reading, and returns the
// reply. A reply with an error code is a *bird.Error (errors.As). ctx's
// deadline applies, shortened to 5 s.
func (r *Router) Query(ctx context.Context, command string) (bird.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, birdTimeout)
	defer cancel()
	c, err := bird.Dial(ctx, r.BirdSocket)
	if err != nil {
		return bird.Reply{}, fmt.Errorf("%s: %w", r.Name, err)
	}
	defer c.Close()
	reply, err := c.Exec(ctx, command)
	if err != nil {
		return reply, fmt.Errorf("%s: %q: %w", r.Name, command, err)
	}
	return reply, nil
}

// Birdc runs BIRD's own client, birdc, with one command, as an operator
// would, and returns its output without the greeting. It is for the
// commands that change BIRD's state (disable, enable, configure), which
// package bird's read-only connection refuses; questions go through
// [Router.Query]. BIRD's errors make birdc fail, and the error holds its
// output. ctx's deadline applies, shortened to 5 s.
func (r *Router) Birdc(ctx context.Context, command string) (string, error) {
	if command == "" || strings.ContainsAny(command, "\r\n") {
		return "", fmt.Errorf("%s: birdc %q: want one non-empty line", r.Name, command)
	}
	ctx, cancel := context.WithTimeout(ctx, birdTimeout)
	defer cancel()
	out, err := combined(exec.CommandContext(ctx, "birdc", "-s", r.BirdSocket, command))
	_, out, _ = strings.Cut(out, "\n") // "BIRD 2.0.12 ready."
	out = strings.TrimRight(out, "\n")
	if err != nil {
		return out, fmt.Errorf("%s: birdc %q: %w: %s", r.Name, command, err, out)
	}
	return out, nil
}

// Protocols returns BIRD's `show protocols`, read by package bird.
func (r *Router) Protocols(ctx context.Context) ([]bird.Protocol, error) {
	reply, err := r.Query(ctx, "show protocols")
	if err != nil {
		return nil, err
	}
	ps, err := bird.ParseProtocols(reply)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	return ps, nil
}

// Routes returns every path BIRD holds for exactly prefix, best path marked,
// with From naming the lab host each BGP path came from. A prefix BIRD does
// not know gives no routes and no error. It reads `show route <prefix>`
// with the lab's own parser (see [Route]).
func (r *Router) Routes(ctx context.Context, prefix netip.Prefix) ([]Route, error) {
	return r.routes(ctx, "show route "+prefix.String())
}

// TableRoutes returns every path of BIRD's table (e.g. "master4"), as
// [Router.Routes] does for one prefix.
func (r *Router) TableRoutes(ctx context.Context, table string) ([]Route, error) {
	return r.routes(ctx, "show route table "+table)
}

func (r *Router) routes(ctx context.Context, command string) ([]Route, error) {
	reply, err := r.Query(ctx, command)
	var be *bird.Error
	if errors.As(err, &be) && be.Code == bird.CodeNetworkNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	texts := make([]string, 0, len(reply.Lines))
	for _, l := range reply.Lines {
		texts = append(texts, l.Text)
	}
	routes, err := parseRoutes(texts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Name, err)
	}
	for i := range routes {
		for _, s := range r.sessions {
			if s.Name == routes[i].Protocol {
				routes[i].From = s.Host
			}
		}
	}
	return routes, nil
}

// routeCount is a line of `show route count`.
var routeCount = regexp.MustCompile(`^(\d+) of (\d+) routes for (\d+) networks in table (\S+)$`)

// RouteCount returns how many networks BIRD's table holds, from `show route
// count table <table>`: cheaper than listing a table of thousands of routes.
func (r *Router) RouteCount(ctx context.Context, table string) (int, error) {
	reply, err := r.Query(ctx, "show route count table "+table)
	if err != nil {
		return 0, err
	}
	for _, l := range reply.Lines {
		if m := routeCount.FindStringSubmatch(l.Text); m != nil && m[4] == table {
			return strconv.Atoi(m[3])
		}
	}
	return 0, fmt.Errorf("%s: show route count table %s: no count for the table in %+v", r.Name, table, reply.Lines)
}

// Best returns the best path among routes, if any.
func Best(routes []Route) (Route, bool) {
	for _, r := range routes {
		if r.Best {
			return r, true
		}
	}
	return Route{}, false
}

// established says which BGP session of the host is not Established, or
// nil when all are.
func (r *Router) established(ctx context.Context) error {
	ps, err := r.Protocols(ctx)
	if err != nil {
		return err
	}
	seen := 0
	for _, p := range ps {
		if p.Proto != "BGP" {
			continue
		}
		if !p.Established() {
			return fmt.Errorf("%s: protocol %q is %s %s", r.Name, p.Name, p.State, p.Info)
		}
		seen++
	}
	if seen != len(r.sessions) {
		return fmt.Errorf("%s: %d BGP protocols, want %d", r.Name, seen, len(r.sessions))
	}
	return nil
}
