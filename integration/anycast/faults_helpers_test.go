//go:build integration

package anycast

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// faultSite shapes the one site of a fault test.
type faultSite struct {
	// edit rewrites rhi.yaml before rhi starts (nil: as WriteConfig wrote it).
	edit func(t *testing.T, s *Site, text string) string
	// wrap is a command prefix rhi runs under (setpriv …): every rhi command
	// of the site goes through it.
	wrap []string
	// before runs after the lab is up and before rhi starts.
	before func(t *testing.T, w *world, s *Site)
}

// newFaultSite builds a one-ADC lab with a site for cfg shaped by o, and
// starts rhi.
func newFaultSite(t *testing.T, cfg site.Config, o faultSite) (*world, *Site) {
	t.Helper()
	l := lab.ForTest(t, lab.Options{DCs: 1})
	w := &world{lab: l}
	ctx := context.Background()
	b := bins
	if len(o.wrap) > 0 {
		b.RHI = wrapper(t, o.wrap, bins.RHI)
	}
	s, err := NewSite(ctx, l.DCs[0], b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.sites = []*Site{s}
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"rhi-main.log", "rhi-error.log"} {
				b, _ := os.ReadFile(filepath.Join(s.DC.Dir, f))
				t.Logf("%s %s (tail):\n%s", s.DC.Name, f, tail(string(b), 4000))
			}
		}
		s.StopRHI()
	})
	if o.edit != nil {
		text, err := os.ReadFile(s.Config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.Config, []byte(o.edit(t, s, string(text))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if o.before != nil {
		o.before(t, w, s)
	}
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	return w, s
}

// wrapper writes a script that runs bin under prefix.
func wrapper(t *testing.T, prefix []string, bin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rhi-wrapped")
	script := "#!/bin/sh\nexec " + strings.Join(append(prefix, bin), " ") + ` "$@"` + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// replaceOnce replaces old with new in text, failing the test unless old
// occurs exactly once: a config template that changed must not turn a
// fault test into one without the fault.
func replaceOnce(t *testing.T, text, old, new string) string {
	t.Helper()
	if n := strings.Count(text, old); n != 1 {
		t.Fatalf("rhi.yaml holds %q %d times, want once:\n%s", old, n, text)
	}
	return strings.Replace(text, old, new, 1)
}

// birdAt points the site's bird.socket at path, with bird.timeout set to
// timeout. The timeout also bounds the confirmations before and after the
// fault, which must succeed (the tests count the lines the failures log):
// not less than 2 s, or a loaded machine turns a slow answer into one more.
func birdAt(path string, timeout time.Duration) func(*testing.T, *Site, string) string {
	return func(t *testing.T, s *Site, text string) string {
		return replaceOnce(t, text, "  socket: "+s.DC.BirdSocket+"\n",
			"  socket: "+path+"\n  timeout: "+timeout.String()+"\n")
	}
}

// pointSocket makes link a symlink to target, replacing what was there in
// one step: rhi dials its socket afresh for every check.
func pointSocket(t *testing.T, link, target string) {
	t.Helper()
	tmp := link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// birdPid reads the pid of the host's BIRD from the pid file the lab gives
// it (-P).
func birdPid(t *testing.T, d *lab.DC) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Dir, "bird.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("bird.pid holds %q", b)
	}
	return pid
}

// signalBird sends sig to the host's BIRD.
func signalBird(t *testing.T, d *lab.DC, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(birdPid(t, d), sig); err != nil {
		t.Fatalf("signal %v to bird of %s: %v", sig, d.Name, err)
	}
}

// statusWhen waits until ok accepts rhi's status, and returns that status.
func (s *Site) statusWhen(t *testing.T, what string, ok func(status.Status) error) status.Status {
	t.Helper()
	return s.statusWithin(t, 30*time.Second, what, ok)
}

// statusWithin is statusWhen with its own deadline.
func (s *Site) statusWithin(t *testing.T, deadline time.Duration, what string, ok func(status.Status) error) status.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var st status.Status
	var last error // what ok said last: the last Status may be cut by the deadline
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		var err error
		if st, err = s.Status(ctx); err != nil {
			return err
		}
		last = ok(st)
		return last
	})
	if err != nil {
		t.Fatalf("%s: never %s: %v (last status: %v)", s.DC.Name, what, err, last)
	}
	return st
}

// birdAgrees waits until rhi confirms through BIRD, in a check made after
// since (zero: any), that all n VIPs are as it wants them and every selected
// BGP session is Established (with none Established, every VIP would agree
// trivially), and /metrics says BIRD is up.
func (s *Site) birdAgrees(t *testing.T, n int, since time.Time) {
	t.Helper()
	s.statusWhen(t, "confirmed every VIP through BIRD", func(st status.Status) error {
		if !st.Bird.LastCheck.After(since) {
			return errorf("no check since %s (last %s)", since.Format(time.RFC3339Nano), st.Bird.LastCheck.Format(time.RFC3339Nano))
		}
		if st.Bird.Error != "" || st.Bird.Agree != n || st.Bird.Disagree != 0 {
			return errorf("BIRD agrees on %d, disagrees on %d, error %q", st.Bird.Agree, st.Bird.Disagree, st.Bird.Error)
		}
		if len(st.Bird.Protocols) == 0 {
			return errorf("no BGP protocols in BIRD's last report")
		}
		for _, p := range st.Bird.Protocols {
			if !p.Established {
				return errorf("protocol %s is %s %s", p.Name, p.State, p.BGPState)
			}
		}
		return nil
	})
	s.metricsHave(t, "rhi_bird_up 1")
}

// birdFails waits until rhi reports that it cannot confirm through BIRD,
// with an error holding want, in /status and /metrics.
func (s *Site) birdFails(t *testing.T, want string) status.Status {
	t.Helper()
	st := s.statusWhen(t, "reported BIRD unreachable", func(st status.Status) error {
		if !strings.Contains(st.Bird.Error, want) {
			return errorf("bird error %q, want it to hold %q", st.Bird.Error, want)
		}
		return nil
	})
	s.metricsHave(t, "rhi_bird_up 0")
	return st
}

// checksAfter waits until rhi has confirmed through BIRD n more times since
// the status st was taken: with a fault in place, retries that must not log
// again.
func (s *Site) checksAfter(t *testing.T, st status.Status, n int) {
	t.Helper()
	last, seen := st.Bird.LastCheck, 0
	s.statusWhen(t, "retried the confirmation", func(st status.Status) error {
		if st.Bird.LastCheck.After(last) {
			last = st.Bird.LastCheck
			seen++
		}
		if seen < n {
			return errorf("%d of %d checks", seen, n)
		}
		return nil
	})
}

// pollsAfter waits until rhi has polled n more times since st was taken.
func (s *Site) pollsAfter(t *testing.T, st status.Status, n uint64) status.Status {
	t.Helper()
	return s.statusWhen(t, "kept polling", func(now status.Status) error {
		if now.ControlAPI.Polls < st.ControlAPI.Polls+n {
			return errorf("%d polls, want %d", now.ControlAPI.Polls, st.ControlAPI.Polls+n)
		}
		return nil
	})
}

// logCount counts the lines of the site's log file that hold every one of
// substrs.
func (s *Site) logCount(t *testing.T, file string, substrs ...string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.DC.Dir, file))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
next:
	for _, l := range strings.Split(string(b), "\n") {
		for _, sub := range substrs {
			if !strings.Contains(l, sub) {
				continue next
			}
		}
		n++
	}
	return n
}

// logOnce fails unless the site's log file holds exactly want lines with
// every one of substrs.
func (s *Site) logOnce(t *testing.T, file string, want int, substrs ...string) {
	t.Helper()
	if n := s.logCount(t, file, substrs...); n != want {
		t.Errorf("%s: %s has %d lines with %q, want %d", s.DC.Name, file, n, substrs, want)
	}
}

// alive fails the test if rhi has exited.
func (s *Site) alive(t *testing.T) {
	t.Helper()
	p := s.RHI()
	if p == nil {
		t.Fatalf("%s: rhi is not running", s.DC.Name)
	}
	select {
	case <-p.Done():
		t.Fatalf("%s: rhi exited: %v", s.DC.Name, p.Wait(context.Background()))
	default:
	}
}

// ip runs ip with args in the site's namespace.
func (s *Site) ip(t *testing.T, args ...string) {
	t.Helper()
	if _, err := s.DC.Run(context.Background(), "ip", args...); err != nil {
		t.Fatal(err)
	}
}

// watchPeer asks the peer about addrs over and over until the returned
// stop is called (at the latest when the test ends); stop returns the
// addresses the peer was once seen without a route for.
func watchPeer(t *testing.T, w *world, addrs ...string) (stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	lost := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, a := range addrs {
				v, err := site.Peer(ctx, w.lab, prefix(a))
				if err == nil && len(v.From) == 0 {
					lost[a] = true
				}
			}
		}
	}()
	stop = func() []string {
		cancel()
		<-done
		var out []string
		for _, a := range addrs {
			if lost[a] {
				out = append(out, a)
			}
		}
		return out
	}
	t.Cleanup(func() { stop() })
	return stop
}
