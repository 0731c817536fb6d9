//go:build integration

package anycast

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/ctlsock"
	"github.com/rhi-daemon/rhi/internal/decide"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/inns"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
)

// controlSocket is the site's control_socket, as WriteConfig writes it.
func (s *Site) controlSocket() string { return filepath.Join(s.DC.Dir, "rhi.sock") }

// ctlStatus asks rhi for its status on the control socket, as the CLI does:
// an impostor on status_listen is not asked.
func (s *Site) ctlStatus(ctx context.Context) (status.Status, error) {
	var st status.Status
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://rhi/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := ctlsock.Client{Path: s.controlSocket()}.HTTP().Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("control socket: HTTP %d", resp.StatusCode)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st)
	return st, err
}

// ctlStatusWhen waits (30 s at most) until the status on the control socket
// satisfies ok.
func (s *Site) ctlStatusWhen(t *testing.T, what string, ok func(status.Status) error) status.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var st status.Status
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		var err error
		if st, err = s.ctlStatus(ctx); err != nil {
			return err
		}
		return ok(st)
	})
	if err != nil {
		t.Fatalf("%s: %s: %v", s.DC.Name, what, err)
	}
	return st
}

// openFDs counts the descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// flood opens n connections to addr from inside namespace ns, each sending
// one keep-alive request and then nothing: the idle connections of the
// red-team report. It returns the connections; the caller closes them.
func flood(t *testing.T, ns, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := site.DialIn(ns, addr)
		if err != nil {
			closeAll(conns)
			t.Fatalf("connection %d of the flood: %v", len(conns)+1, err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: rhi\r\n\r\n")
		conns = append(conns, c)
	}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// stillOpen counts the connections the server has not closed: a read that
// times out rather than ending (the answer to the one request is read
// first, if there is one).
func stillOpen(conns []net.Conn) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	n := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return n
}

// TestStatusListenFlood: 1,100 idle keep-alive connections to status_listen,
// with rhi limited to 1,024 descriptors, took every poll down before (EMFILE,
// then the failure policy withdrew every VIP). The server now holds 64 at
// most: polls go on, the VIPs stay, the control socket answers.
func TestStatusListenFlood(t *testing.T) {
	const nofile, n = 1024, 1100
	// apisix_timeout 5 s: the flood loads the machine, and a poll that only
	// ran slow must not pass for one that failed (EMFILE fails at once).
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed, Timeout: 5 * time.Second}, faultSite{wrap: []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--"}})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	pid := s.RHI().Pid()
	base := openFDs(t, pid)
	before := s.ctlStatusWhen(t, "ready", func(st status.Status) error {
		if !st.Ready {
			return errors.New("not ready")
		}
		return nil
	})

	start := time.Now()
	conns := flood(t, s.DC.NS, s.StatusAddr, n)
	defer closeAll(conns)
	fds := openFDs(t, pid)
	held := stillOpen(conns)
	t.Logf("flood of %d connections in %s: rhi holds %d descriptors (%d before), %d flood connections still open", n, time.Since(start).Round(time.Millisecond), fds, base, held)
	if held > 64 {
		t.Errorf("%d flood connections held open, want at most 64", held)
	}
	if fds > base+64+16 {
		t.Errorf("rhi holds %d descriptors under the flood (%d before), want at most %d", fds, base, base+64+16)
	}

	// Polls go on with the flood held: ten more, none failed.
	after := s.ctlStatusWhen(t, "ten polls during the flood", func(st status.Status) error {
		if st.ControlAPI.Polls < before.ControlAPI.Polls+10 {
			return fmt.Errorf("%d polls", st.ControlAPI.Polls)
		}
		return nil
	})
	if after.ControlAPI.FailedPolls != before.ControlAPI.FailedPolls || after.ControlAPI.ConsecutiveFailedPolls != 0 {
		t.Errorf("polls failed during the flood: %d failed in all (%d before), %d in a row", after.ControlAPI.FailedPolls, before.ControlAPI.FailedPolls, after.ControlAPI.ConsecutiveFailedPolls)
	}
	for _, v := range after.VIPs {
		if !v.OnInterface || !v.Desired {
			t.Errorf("%s during the flood: desired %v, on the interface %v (%s)", v.Address, v.Desired, v.OnInterface, v.Reason)
		}
	}
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	if out, code, err := s.RHICommand(context.Background(), "status"); err != nil || code != 0 {
		t.Errorf("rhi status during the flood: exit %d, %v\n%s", code, err, out)
	}
	s.alive(t)

	// The flood gone, status_listen serves again.
	closeAll(conns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		code, body, err := s.Get(ctx, "/metrics")
		if err == nil && (code != 200 || !strings.Contains(body, "rhi_build_info")) {
			err = fmt.Errorf("HTTP %d", code)
		}
		return err
	}); err != nil {
		t.Errorf("/metrics after the flood: %v", err)
	}
}

// impostor serves, on status_listen inside the site's namespace, a status
// that says every VIP is drained, withdrawn and confirmed by BIRD, with a
// terminal sequence in each reason. It returns a func that stops it.
func impostor(t *testing.T, s *Site) (stop func()) {
	t.Helper()
	lie := status.Status{Ready: true, Bird: status.BirdStatus{Enabled: true}}
	for _, v := range s.vipsOfConfig(t) {
		lie.VIPs = append(lie.VIPs, status.VIPStatus{
			Address: v, Drained: true, Verdict: decide.Available, Reason: decide.Reason("IMPOSTOR\x1b[2J"),
			Bird: &status.VIPConfirm{Agrees: true, Expected: router.Absent, CheckedAt: time.Now().Add(time.Hour)},
		})
	}
	body, err := json.Marshal(lie)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := inns.DoNamed(s.DC.NS, func() error {
		var err error
		ln, err = net.Listen("tcp", s.StatusAddr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	go srv.Serve(ln)
	var once sync.Once
	stop = func() { once.Do(func() { srv.Close() }) }
	t.Cleanup(stop)
	return stop
}

// vipsOfConfig lists the site's VIPs as /status writes them.
func (s *Site) vipsOfConfig(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range seedAddrs() {
		out = append(out, prefix(a).String())
	}
	return out
}

// TestStatusListenSquatter: a process that binds status_listen first no
// longer stops rhi (it retries in the background) nor fools its CLI, which
// asks on the control socket: `rhi drain --all` reports what the real
// daemon did, and the VIPs really leave.
func TestStatusListenSquatter(t *testing.T) {
	var stop func()
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{before: func(t *testing.T, w *world, s *Site) { stop = impostor(t, s) }})
	s.ctlStatusWhen(t, "the real rhi ready", func(st status.Status) error {
		if !st.Ready {
			return errors.New("not ready")
		}
		return nil
	})
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.alive(t)
	if n := s.logCount(t, "rhi-error.log", "cannot serve", "listener=status_listen", "address already in use"); n != 1 {
		t.Errorf("rhi-error.log has %d errors about status_listen being taken, want 1", n)
	}

	ctx := context.Background()
	out, code, err := s.RHICommand(ctx, "status")
	if err != nil || code != 0 || strings.Contains(out, "IMPOSTOR") || !strings.Contains(out, "announce") {
		t.Errorf("rhi status: exit %d, %v; it must show the real daemon (announcing), not the impostor:\n%s", code, err, out)
	}
	out, code, err = s.RHICommand(ctx, "drain", "--all")
	if err != nil || code != 0 {
		t.Fatalf("rhi drain --all: exit %d, %v\n%s", code, err, out)
	}
	if strings.Contains(out, "IMPOSTOR") || strings.Count(out, "withdrawn  BIRD agrees") != len(site.Seed) {
		t.Errorf("rhi drain --all said:\n%s", out)
	}
	// What it said is true: off the interface, gone at the peer.
	s.holds(t, "")
	w.peerSees(t, "no route", seedAddrs()...)

	// The squatter leaves: rhi takes status_listen on a later attempt.
	stop()
	wctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	if err := lab.Eventually(wctx, 0, 0, func(context.Context) error {
		code, body, err := s.Get(wctx, "/metrics")
		if err == nil && (code != 200 || !strings.Contains(body, "rhi_build_info")) {
			err = fmt.Errorf("HTTP %d", code)
		}
		return err
	}); err != nil {
		t.Errorf("status_listen after the squatter left: %v", err)
	}
	if out, code, _ := s.RHICommand(ctx, "undrain", "--all"); code != 0 {
		t.Fatalf("rhi undrain --all: exit %d\n%s", code, out)
	}
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
}

// TestConcurrentDrainsLab: 30 `rhi drain` of different VIPs at once, each
// waiting for the daemon and BIRD, all succeed and all end up in the file
// and off the peer; 30 undrains at once bring them all back.
func TestConcurrentDrainsLab(t *testing.T) {
	vips := bulk(30)
	w, s := newFaultSite(t, site.Config{VIPs: vips}, faultSite{})
	var addrs []string
	for _, v := range vips {
		addrs = append(addrs, v.Address)
	}
	w.peerSees(t, "via dc1 (paths from dc1)", addrs...)

	run := func(cmd string) {
		t.Helper()
		var wg sync.WaitGroup
		for _, a := range addrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, code, err := s.RHICommand(context.Background(), cmd, a)
				if err != nil || code != 0 {
					t.Errorf("rhi %s %s: exit %d, %v\n%s", cmd, a, code, err, out)
				}
			}()
		}
		wg.Wait()
	}
	run("drain")
	set, err := drain.Read(filepath.Join(s.DC.Dir, "drain"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if !set.Has(prefix(a)) {
			t.Errorf("%s is not in the drain file", a)
		}
	}
	s.holds(t, "")
	w.peerSees(t, "no route", addrs...)

	run("undrain")
	if set, err := drain.Read(filepath.Join(s.DC.Dir, "drain")); err != nil || !set.Empty() {
		t.Errorf("drain file after 30 undrains: %+v, %v", set, err)
	}
	w.peerSees(t, "via dc1 (paths from dc1)", addrs...)
}
