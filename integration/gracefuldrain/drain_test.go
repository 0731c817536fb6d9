//go:build integration

package gracefuldrain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/inns"
)

var vip = netip.MustParsePrefix("10.255.0.10/32")

const (
	port = 9753
	// perTick packets go every millisecond: 10,000 packets a second, so that
	// a loss window of a millisecond shows.
	perTick = 10
	// The client's link to the router.
	routerSide, clientSide, clientNet = "10.254.0.1", "10.254.0.2", "10.254.0.0/30"
)

// runs is how many times each case runs: RHI_DRAIN_RUNS, default 5.
func runs(t *testing.T) int {
	if s := os.Getenv("RHI_DRAIN_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("RHI_DRAIN_RUNS=%q: want a count", s)
		}
		return n
	}
	return 5
}

// stream is one run's traffic: what the client sent, what each site got.
type stream struct {
	mu   sync.Mutex
	sent []time.Time             // send time by sequence number
	got  map[uint32][2]time.Time // receive time at each site, zero if not received
}

func (s *stream) received(site int, seq uint32, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.got[seq]
	if g[site].IsZero() {
		g[site] = at
		s.got[seq] = g
	}
}

// receivers are a UDP socket on port in each site's namespace, counting
// into the stream that is current.
type receivers struct {
	mu  sync.Mutex
	cur *stream
}

func (r *receivers) listen(t *testing.T, i int, ns string) {
	var conn *net.UDPConn
	err := inns.DoNamed(ns, func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			at := time.Now()
			if n < 4 {
				continue
			}
			r.mu.Lock()
			s := r.cur
			r.mu.Unlock()
			if s != nil {
				s.received(i, binary.BigEndian.Uint32(buf), at)
			}
		}
	}()
}

// send streams to the VIP from conn until ctx ends: perTick packets every
// millisecond, each carrying its sequence number.
func send(ctx context.Context, conn *net.UDPConn, s *stream) {
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	buf := make([]byte, 32)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		for range perTick {
			s.mu.Lock()
			seq := uint32(len(s.sent))
			s.sent = append(s.sent, time.Now())
			s.mu.Unlock()
			binary.BigEndian.PutUint32(buf, seq)
			_, _ = conn.Write(buf) // an unreachable VIP is a lost packet, counted below
		}
	}
}

// result is one run's figures.
type result struct {
	sent, lost int
	moved      time.Duration // from the drain or SIGTERM to the first packet at the other site
	withdrawn  time.Duration // from the drain or SIGTERM to `rhi drain` returning or rhi exiting
}

func (r result) String() string {
	return fmt.Sprintf("sent %d, lost %d, moved after %s, withdrawn after %s", r.sent, r.lost, r.moved.Round(time.Millisecond), r.withdrawn.Round(time.Millisecond))
}

// figures judges s: carrier was the site that carried the stream, the
// action began at t0.
func (s *stream) figures(carrier int, t0 time.Time) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r result
	r.sent = len(s.sent)
	other := 1 - carrier
	for seq := range s.sent {
		g := s.got[uint32(seq)]
		if g[0].IsZero() && g[1].IsZero() {
			r.lost++
		}
		if at := g[other]; !at.IsZero() && at.After(t0) && (r.moved == 0 || at.Sub(t0) < r.moved) {
			r.moved = at.Sub(t0)
		}
	}
	return r
}

// carrier is the site that received the most of the last 200 packets.
func (s *stream) carrier() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n [2]int
	for seq := max(0, len(s.sent)-200); seq < len(s.sent); seq++ {
		g := s.got[uint32(seq)]
		for i := range 2 {
			if !g[i].IsZero() {
				n[i]++
			}
		}
	}
	switch {
	case n[0] > n[1]:
		return 0, nil
	case n[1] > n[0]:
		return 1, nil
	}
	return 0, fmt.Errorf("no site carries the stream (received %v of the last 200)", n)
}

// drainLab is the two-site lab with a client namespace behind the router.
type drainLab struct {
	l      *lab.Lab
	sites  []*site.Site
	cfg    site.Config
	client *net.UDPConn
	rx     *receivers
}

func newDrainLab(t *testing.T) *drainLab {
	t.Helper()
	l := lab.ForTest(t, lab.Options{Prefix: "rhigd-", DCs: 2,
		Tiers: &birdconf.Defines{DegradedPrepend: 3, Guard4: "10.255.0.0/16{32,32}", Guard6: "fd00:255::/32{128,128}"}})
	ctx := t.Context()
	d := &drainLab{l: l, rx: &receivers{},
		cfg: site.Config{OnShutdown: "withdraw", PollInterval: 200 * time.Millisecond,
			VIPs: []site.VIP{{Address: vip.Addr().String(), Upstreams: []string{"/apisix/upstreams/api"}}}}}
	d.clientNS(t, ctx)
	bins, err := site.Build(ctx, "rhigd-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Remove() })
	for i, dc := range l.DCs {
		s, err := site.New(ctx, dc, bins, d.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.StopRHI() })
		d.sites = append(d.sites, s)
		d.rx.listen(t, i, dc.NS)
	}
	return d
}

// clientNS makes the client's namespace, linked to the router, which
// forwards; each site routes replies to it through the router.
func (d *drainLab) clientNS(t *testing.T, ctx context.Context) {
	t.Helper()
	ns := d.l.Name + "-cl"
	run := func(args ...string) {
		t.Helper()
		if out, err := command(ctx, "ip", args...); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { _, _ = command(context.Background(), "ip", "netns", "del", ns) })
	run("link", "add", "name", "cl0", "netns", ns, "type", "veth", "peer", "name", "client", "netns", d.l.Peer.NS)
	run("-n", ns, "addr", "add", clientSide+"/30", "dev", "cl0")
	run("-n", ns, "link", "set", "cl0", "up")
	run("-n", ns, "link", "set", "lo", "up")
	run("-n", ns, "route", "add", "default", "via", routerSide)
	run("-n", d.l.Peer.NS, "addr", "add", routerSide+"/30", "dev", "client")
	run("-n", d.l.Peer.NS, "link", "set", "client", "up")
	if _, err := d.l.Peer.Run(ctx, "sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatal(err)
	}
	for _, dc := range d.l.DCs {
		run("-n", dc.NS, "route", "add", clientNet, "via", dc.PeerAddr4.String())
	}
	err := inns.DoNamed(ns, func() (err error) {
		d.client, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IP(vip.Addr().AsSlice()), Port: port})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.client.Close() })
}

// command runs a short command, bounded to 30 s, and returns its output.
func command(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// configure rewrites every site's config with drain_grace (empty: the
// default) and has the running ones reload it.
func (d *drainLab) configure(t *testing.T, grace string) {
	t.Helper()
	for _, s := range d.sites {
		if err := s.WriteConfig(d.cfg); err != nil {
			t.Fatal(err)
		}
		if grace != "" {
			f, err := os.OpenFile(s.Config, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = fmt.Fprintf(f, "drain_grace: %s\n", grace)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if s.RHI() != nil {
			if out, code, err := s.RHICommand(t.Context(), "reload"); err != nil || code != 0 {
				t.Fatalf("%s: rhi reload: exit %d, %v: %s", s.DC.Name, code, err, out)
			}
		}
	}
}

// bothServe waits until the router has a path from each site and the
// client's packets reach one of them.
func (d *drainLab) bothServe(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		v, err := site.Peer(ctx, d.l, vip)
		if err != nil {
			return err
		}
		if len(v.From) != 2 {
			return fmt.Errorf("router: %s", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("both sites do not serve %s: %v", vip, err)
	}
}

// run is one drain (sigterm false) or stop (true) of the site that
// carries the stream, with the grace the sites were configured with.
func (d *drainLab) run(t *testing.T, sigterm, graceful bool) result {
	t.Helper()
	d.bothServe(t)
	ctx := t.Context()
	s := &stream{got: map[uint32][2]time.Time{}}
	d.rx.mu.Lock()
	d.rx.cur = s
	d.rx.mu.Unlock()
	sctx, stop := context.WithCancel(ctx)
	sent := make(chan struct{})
	go func() { send(sctx, d.client, s); close(sent) }()
	defer func() { stop(); <-sent }()

	var carrier int
	err := lab.Eventually(ctx, 10*time.Second, 0, func(context.Context) (err error) {
		carrier, err = s.carrier()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a steady stream before the action
	c := d.sites[carrier]
	t0 := time.Now()
	var done time.Time
	if sigterm {
		p := c.RHI()
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: rhi did not exit within 60s of SIGTERM", c.DC.Name)
		}
		done = time.Now()
		if err := c.StopRHI(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Logf("%s: rhi's exit: %v", c.DC.Name, err)
		}
	} else {
		out, code, err := c.RHICommand(ctx, "drain", vip.Addr().String())
		done = time.Now()
		if err != nil || code != 0 {
			t.Fatalf("%s: rhi drain: exit %d, %v:\n%s", c.DC.Name, code, err, out)
		}
		if graceful && !strings.Contains(out, "BIRD confirmed (GRACEFUL_SHUTDOWN), then withdrawn") {
			t.Errorf("%s: rhi drain did not confirm the last-resort step:\n%s", c.DC.Name, out)
		}
	}
	time.Sleep(time.Second) // the stream after the withdrawal
	stop()
	<-sent
	time.Sleep(200 * time.Millisecond) // packets still on their way
	d.rx.mu.Lock()
	d.rx.cur = nil
	d.rx.mu.Unlock()
	r := s.figures(carrier, t0)
	r.withdrawn = done.Sub(t0)
	t.Logf("%s %s: %s", c.DC.Name, map[bool]string{false: "drain", true: "SIGTERM"}[sigterm], r)

	// Back to two serving sites for the next run.
	if sigterm {
		if err := c.StartRHI(ctx); err != nil {
			t.Fatal(err)
		}
	} else if out, code, err := c.RHICommand(ctx, "undrain", vip.Addr().String()); err != nil || code != 0 {
		t.Fatalf("%s: rhi undrain: exit %d, %v:\n%s", c.DC.Name, code, err, out)
	}
	return r
}

// TestGracefulDrain: `rhi drain` and SIGTERM (on_shutdown: withdraw) at
// the site that carries a 10,000 packets/s stream, with drain_grace 0s and
// with the default grace. With the grace no packet is lost; the figures
// of every run are logged (BENCHMARKS.md).
func TestGracefulDrain(t *testing.T) {
	d := newDrainLab(t)
	n := runs(t)
	for _, c := range []struct {
		name    string
		grace   string
		sigterm bool
	}{
		{"drain/grace0s", "0s", false},
		{"drain/default", "", false},
		{"sigterm/grace0s", "0s", true},
		{"sigterm/default", "", true},
	} {
		d.configure(t, c.grace)
		var rs []result
		for range n {
			rs = append(rs, d.run(t, c.sigterm, c.grace == ""))
		}
		var lost []int
		var moved, withdrawn []time.Duration
		for _, r := range rs {
			lost, moved, withdrawn = append(lost, r.lost), append(moved, r.moved), append(withdrawn, r.withdrawn)
		}
		slices.Sort(lost)
		slices.Sort(moved)
		slices.Sort(withdrawn)
		t.Logf("SUMMARY %s (%d runs): lost %v; moved %v; withdrawn %v", c.name, n, lost, moved, withdrawn)
		if c.grace == "" {
			for i, r := range rs {
				if r.lost != 0 {
					t.Errorf("%s run %d: %d packets lost with the default drain_grace", c.name, i+1, r.lost)
				}
			}
		}
	}
}
