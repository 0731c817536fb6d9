package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
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

// Birdc sends one command to the host's BIRD and returns the reply as birdc
// prints it, without reply codes. BIRD's error replies are *BirdError.
func (r *Router) Birdc(ctx context.Context, command string) (string, error) {
	lines, err := birdExchange(ctx, r.BirdSocket, command)
	if err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// Protocols returns BIRD's `show protocols`.
func (r *Router) Protocols(ctx context.Context) ([]Protocol, error) {
	lines, err := birdExchange(ctx, r.BirdSocket, "show protocols")
	if err != nil {
		return nil, err
	}
	return parseProtocols(lines)
}

// Routes returns every path BIRD holds for exactly prefix, best path marked,
// with From naming the lab host each BGP path came from. A prefix BIRD does
// not know gives no routes and no error.
func (r *Router) Routes(ctx context.Context, prefix netip.Prefix) ([]Route, error) {
	lines, err := birdExchange(ctx, r.BirdSocket, "show route "+prefix.String())
	var be *BirdError
	if errors.As(err, &be) && be.Code == 8001 { // "Network not found"
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	routes, err := parseRoutes(lines)
	if err != nil {
		return nil, err
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

// Best returns the best path among routes, if any.
func Best(routes []Route) (Route, bool) {
	for _, r := range routes {
		if r.Best {
			return r, true
		}
	}
	return Route{}, false
}

// established reports whether every BGP session of the host is Established,
// and if not, names the first one that is not.
func (r *Router) established(ctx context.Context) (bool, error) {
	ps, err := r.Protocols(ctx)
	if err != nil {
		return false, err
	}
	seen := 0
	for _, p := range ps {
		if p.Proto != "BGP" {
			continue
		}
		if !p.Established() {
			return false, fmt.Errorf("%s: protocol %q is %s %s", r.Name, p.Name, p.State, p.Info)
		}
		seen++
	}
	if seen != len(r.sessions) {
		return false, fmt.Errorf("%s: %d BGP protocols, want %d", r.Name, seen, len(r.sessions))
	}
	return true, nil
}
