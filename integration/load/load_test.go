//go:build integration

// Package load holds the lab test of rhi under hostile readers: many slow
// clients of /status and /metrics at 10,000 VIPs must cost rhi bounded
// memory and never hold up its polls.
package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

const (
	nVIPs      = 10000
	nUpstreams = 1000
	poll       = time.Second
	readers    = 60 // on each of /status and /metrics
	window     = 30 * time.Second
	hold       = 10 * time.Second // how long a reader keeps one request
	// rssBound is what rhi may hold at 10,000 VIPs whatever its readers
	// do: ~30 MiB at rest, one render of /status or /metrics at a time
	// (~20 MiB while it runs), at most two documents of each kind alive
	// (~8 MiB of /status, ~9 MiB of /metrics each) and the buffers of 64
	// connections. Before the documents were shared, 60 slow readers of
	// /status alone took it to ~480 MiB.
	rssBound = 128 << 20
)

// TestSlowReadersAtScale: 60 clients reading /status and 60 reading
// /metrics one byte every 100 ms, for 30 s, at 10,000 VIPs over 1,000
// upstreams polled every second (list mode: one request per poll): rhi's
// RSS stays under rssBound, no poll starts more than one interval late,
// and no VIP changes (every address stays on the interface, no
// transition, no failed poll).
func TestSlowReadersAtScale(t *testing.T) {
	l := lab.ForTest(t, lab.Options{DCs: 1, Prefix: "rhi-load-", Wait: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	bins, err := site.Build(ctx, "rhi-load-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer bins.Remove()

	vips := make([]site.VIP, nVIPs)
	for i := range vips {
		vips[i] = site.VIP{Address: site.VIPAddr(i), Upstreams: []string{fmt.Sprintf("/apisix/upstreams/u%d", i%nUpstreams)}}
	}
	// The fake API is given the upstreams of the first 1,000 VIPs, every
	// upstream once: its command line cannot hold 10,000 keys.
	s, err := site.New(ctx, l.DCs[0], bins, site.Config{VIPs: vips[:nUpstreams]})
	if err != nil {
		t.Fatal(err)
	}
	// The poll budget is off: this test holds the loop to its configured
	// interval under readers, where the budget could rightly stretch it
	// once it has measured a few list polls of 10,000 VIPs.
	cfg := site.Config{PollInterval: poll, VIPs: vips, PollMode: "list", Extra: `apisix_poll_budget: "0%"`}
	if err := s.WriteConfig(cfg); err != nil {
		t.Fatal(err)
	}
	s.StartWait = 2 * time.Minute
	started := time.Now()
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.StopRHI()
	var want []netip.Prefix
	for _, v := range vips {
		want = append(want, netip.MustParsePrefix(v.Address+"/32"))
	}
	slices.SortFunc(want, netip.Prefix.Compare)
	err = lab.Eventually(ctx, 2*time.Minute, time.Second, func(ctx context.Context) error {
		return sameAddrs(ctx, s, want)
	})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := quiet(ctx, t, s)
	t.Logf("up in %s: %d VIPs on %s, %d polls", time.Since(started).Round(time.Millisecond), nVIPs, s.DC.Iface, before.ControlAPI.Polls)
	pid := s.RHI().Pid()
	idle, err := site.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}

	loadCtx, stop := context.WithTimeout(ctx, window)
	defer stop()
	var wg sync.WaitGroup
	counts := map[string]*readCount{"/status": {}, "/metrics": {}}
	for path, c := range counts {
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slowReader(loadCtx, s, path, c)
			}()
		}
	}
	var (
		peak    int64
		starts  []time.Time
		onIface []int
	)
	wg.Add(1)
	go func() { // rhi's RSS and the poll starts, as the fake API sees them
		defer wg.Done()
		last := -1
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			n, err := s.API.Requests()
			if err != nil {
				t.Errorf("fake API: %v", err)
				return
			}
			if n != last {
				if last >= 0 {
					starts = append(starts, time.Now())
				}
				last = n
			}
			if i%10 == 0 {
				p, err := site.ReadProc(pid)
				if err != nil {
					t.Errorf("rhi: %v", err)
					return
				}
				peak = max(peak, p.RSS)
			}
		}
	}()
	wg.Add(1)
	go func() { // the interface, every 3 s
		defer wg.Done()
		for loadCtx.Err() == nil {
			as, err := addrs(loadCtx, s)
			if err == nil {
				onIface = append(onIface, len(as))
			}
			select {
			case <-loadCtx.Done():
			case <-time.After(3 * time.Second):
			}
		}
	}()
	wg.Wait()
	end, err := site.ReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}

	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	for path, c := range counts {
		t.Logf("%s: %d responses begun, %d bytes read, %d connections refused", path, c.responses.Load(), c.bytes.Load(), c.errors.Load())
		if c.responses.Load() == 0 {
			t.Errorf("%s: no reader got a response: the load did not happen", path)
		}
	}
	t.Logf("RSS: %s at rest, peak %s under load (sampled every 100 ms), %s at the end, VmHWM %s; bound %s",
		site.MiB(idle.RSS), site.MiB(peak), site.MiB(end.RSS), site.MiB(end.HWM), site.MiB(rssBound))
	if len(gaps) > 0 {
		t.Logf("poll starts: %d in %s, gap median %s, max %s (interval %s)", len(starts), window, site.Ms(gaps[len(gaps)/2]), site.Ms(gaps[len(gaps)-1]), poll)
	}
	t.Logf("addresses on %s under load: %v", s.DC.Iface, onIface)
	if peak > rssBound {
		t.Errorf("rhi's RSS peaked at %s under load, over the bound of %s", site.MiB(peak), site.MiB(rssBound))
	}
	if len(starts) < int(window/poll)-2 {
		t.Errorf("%d polls in %s at a %s interval", len(starts), window, poll)
	}
	if len(gaps) > 0 && gaps[len(gaps)-1] > 2*poll {
		t.Errorf("a poll started %s after the one before it: more than one interval (%s) late", site.Ms(gaps[len(gaps)-1]), poll)
	}
	for _, n := range onIface {
		if n != nVIPs {
			t.Errorf("%d addresses on %s under load, want %d", n, s.DC.Iface, nVIPs)
		}
	}

	// After: every VIP where it was, none changed, no poll failed, and the
	// status is current (/status is served again at once).
	if err := sameAddrs(ctx, s, want); err != nil {
		t.Error(err)
	}
	after, asked := quiet(ctx, t, s)
	if d := asked.Sub(after.LastTick); d > 2*poll+time.Second {
		t.Errorf("/status after the load: last tick %s ago", d)
	}
	if after.ControlAPI.FailedPolls != before.ControlAPI.FailedPolls {
		t.Errorf("%d polls failed under load", after.ControlAPI.FailedPolls-before.ControlAPI.FailedPolls)
	}
	if tb, ta := transitions(before), transitions(after); ta != tb {
		t.Errorf("%d VIP transitions under load, want none", ta-tb)
	}
	for _, v := range after.VIPs {
		if !v.Desired || !v.OnInterface {
			t.Errorf("VIP %s: desired %v, on the interface %v after the load", v.Address, v.Desired, v.OnInterface)
			break
		}
	}
}

// readCount is what the readers of one path saw.
type readCount struct {
	responses, bytes, errors atomic.Int64
}

// slowReader asks for path again and again until ctx ends, each time
// reading the response one byte every 100 ms through a small receive
// buffer, as a client that stalls would, for at most hold; then it hangs
// up and asks again (whatever rhi did meanwhile: a response it cut off
// still sits in the client's buffer).
func slowReader(ctx context.Context, s *site.Site, path string, c *readCount) {
	for ctx.Err() == nil {
		conn, err := site.DialIn(s.DC.NS, s.StatusAddr)
		if err != nil {
			c.errors.Add(1)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		conn.SetDeadline(time.Now().Add(hold))
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: rhi\r\n\r\n", path)
		r := bufio.NewReaderSize(conn, 16)
		line, err := r.ReadString('\n')
		if err == nil && strings.HasPrefix(line, "HTTP/1.1 200") {
			c.responses.Add(1)
		} else if ctx.Err() == nil {
			c.errors.Add(1) // refused: rhi serves 64 connections at once
			sleep(ctx, 100*time.Millisecond)
		}
		for err == nil {
			if _, err = r.ReadByte(); err == nil {
				c.bytes.Add(1)
				sleep(ctx, 100*time.Millisecond)
			}
		}
		stop()
		conn.Close()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// addrs lists the IPv4 addresses on the site's interface. (site.Addrs
// reads `ip -j`, whose output at 10,000 addresses is over the lab's 1 MiB
// bound on a command's output.)
func addrs(ctx context.Context, s *site.Site) ([]netip.Prefix, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := s.DC.Exec(ctx, "ip", "-br", "-4", "addr", "show", "dev", s.DC.Iface).Output()
	if err != nil {
		return nil, fmt.Errorf("ip -br addr show dev %s: %w", s.DC.Iface, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return nil, fmt.Errorf("ip -br addr show dev %s: %q", s.DC.Iface, out)
	}
	var ps []netip.Prefix
	for _, a := range f[2:] {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, fmt.Errorf("ip -br addr show dev %s: %w", s.DC.Iface, err)
		}
		ps = append(ps, p)
	}
	slices.SortFunc(ps, netip.Prefix.Compare)
	return ps, nil
}

// sameAddrs is nil when the interface holds exactly want.
func sameAddrs(ctx context.Context, s *site.Site, want []netip.Prefix) error {
	got, err := addrs(ctx, s)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		return fmt.Errorf("%d addresses on %s, want the %d VIPs (first difference at %d: %v)", len(got), s.DC.Iface, len(want), i, got[i:min(i+3, len(got))])
	}
	return nil
}

// quiet reads /status once every VIP is desired and on the interface.
func quiet(ctx context.Context, t *testing.T, s *site.Site) (status.Status, time.Time) {
	t.Helper()
	var st status.Status
	var asked time.Time
	err := lab.Eventually(ctx, 30*time.Second, time.Second, func(ctx context.Context) error {
		var err error
		asked = time.Now()
		if st, err = s.Status(ctx); err != nil {
			return err
		}
		if len(st.VIPs) != nVIPs {
			return fmt.Errorf("%d VIPs in /status", len(st.VIPs))
		}
		for _, v := range st.VIPs {
			if !v.Desired || !v.OnInterface {
				return fmt.Errorf("VIP %s: desired %v, on the interface %v", v.Address, v.Desired, v.OnInterface)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, asked
}

// transitions is the sum of the VIPs' transitions.
func transitions(st status.Status) uint64 {
	var n uint64
	for _, v := range st.VIPs {
		n += v.Transitions
	}
	return n
}
