package daemon

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
	"github.com/rhi-daemon/rhi/internal/health"
)

func drainRig(t *testing.T, present ...string) (*rig, string) {
	t.Helper()
	cfg := seed(config.Withdraw)
	cfg.DrainFile = filepath.Join(t.TempDir(), "drain")
	r := newRig(t, cfg, newFakeLink(present...))
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	return r, cfg.DrainFile
}

// look has the drain watcher look at the file, as its goroutine does every
// drain.Every, and the loop take what it sends.
func (r *rig) look(t *testing.T) {
	t.Helper()
	if u, ok := r.d.drains.drainW.Check(context.Background()); ok {
		r.d.takeDrain(context.Background(), u)
	}
}

func writeDrain(t *testing.T, path string, all bool, vips ...string) {
	t.Helper()
	s := drain.Set{All: all, VIPs: map[netip.Prefix]bool{}}
	for _, v := range vips {
		p, err := drain.ParsePrefix(v)
		if err != nil {
			t.Fatal(err)
		}
		s.VIPs[p] = true
	}
	if err := drain.Write(path, s); err != nil {
		t.Fatal(err)
	}
}

func TestDrainWithdrawsWhateverTheHealth(t *testing.T) {
	r, path := drainRig(t)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")

	writeDrain(t, path, false, "10.0.0.101/32")
	r.look(t) // between polls
	r.expect(t, "10.0.0.100 10.0.0.102")
	st := r.d.Status()
	if v := st.VIPs[1]; !v.Drained || v.Desired || v.Verdict.String() != "available" {
		t.Errorf("drained vip status = %+v", v)
	}
	if st.Drain.Count != 1 || st.Drain.File != path {
		t.Errorf("drain status = %+v", st.Drain)
	}
	r.tick(t) // a poll does not bring it back
	r.expect(t, "10.0.0.100 10.0.0.102")

	writeDrain(t, path, true)
	r.look(t)
	r.expect(t, "")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.look(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.count(logrus.InfoLevel, "drained by the operator"); n != 3 {
		t.Errorf("%d drain lines, want 3 (one VIP, then the other two)", n)
	}
	if n := r.count(logrus.InfoLevel, "undrained"); n != 3 {
		t.Errorf("%d undrain lines, want 3", n)
	}
}

func TestDrainSurvivesRestart(t *testing.T) {
	r, path := drainRig(t, "10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
	writeDrain(t, path, false, "10.0.0.100")
	r.look(t) // Run waits for the watcher's first answer
	r.tick(t) // the first tick of a restarted rhi
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.WarnLevel, "not in the configuration"); n != 0 {
		t.Errorf("a configured VIP drained at start-up was called unknown %d times", n)
	}
}

func TestBadDrainFileKeepsDrains(t *testing.T) {
	r, path := drainRig(t)
	writeDrain(t, path, false, "10.0.0.100")
	r.look(t)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if err := os.WriteFile(path, []byte("10.0.0.100\nbanana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		r.look(t)
		r.tick(t)
	}
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.ErrorLevel, "cannot read the drain file"); n != 1 {
		t.Errorf("bad drain file logged %d times, want once", n)
	}
	if st := r.d.Status(); st.Drain.Error == "" || !st.VIPs[0].Drained {
		t.Errorf("status = %+v", st.Drain)
	}
}

// TestBadDrainFileAtStartDrainsAll: a drain file that cannot be read when
// rhi starts (a typo made while rhi was down) holds drains nobody can
// know: every VIP is treated as drained until it reads, loudly, rather
// than putting a VIP under maintenance back into service. A missing file
// drains nothing.
func TestBadDrainFileAtStartDrainsAll(t *testing.T) {
	r, path := drainRig(t, "10.0.0.100/32", "10.0.0.101/32", "10.0.0.102/32")
	if err := os.WriteFile(path, []byte("10.0.0.100\n10.0.0.1O1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.look(t) // Run waits for the watcher's first answer
	r.tick(t)
	r.expect(t, "")
	st := r.d.Status()
	if !st.Drain.All || !strings.Contains(st.Drain.Error, "every VIP treated as drained") {
		t.Errorf("drain status = %+v, want all drained and the reason", st.Drain)
	}
	if n := r.count(logrus.ErrorLevel, "every VIP is treated as drained until it can be read"); n != 1 {
		t.Errorf("%d error lines, want 1", n)
	}
	writeDrain(t, path, false, "10.0.0.100")
	r.look(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if st := r.d.Status(); st.Drain.All || st.Drain.Error != "" {
		t.Errorf("drain status = %+v after the file was fixed", st.Drain)
	}

	m, missing := drainRig(t, "10.0.0.100/32")
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatalf("drain file %s: %v", missing, err)
	}
	m.look(t)
	m.tick(t)
	m.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
}

func TestDrainOfUnknownVIPIsReported(t *testing.T) {
	r, path := drainRig(t)
	writeDrain(t, path, false, "192.0.2.50")
	r.look(t)
	r.tick(t)
	r.look(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.count(logrus.WarnLevel, "not in the configuration"); n != 1 {
		t.Errorf("unknown drained VIP warned %d times, want 1", n)
	}
}

// waitFor fails the test if ch has not delivered in a long time: it guards
// against a loop that hangs for ever, it times nothing.
func waitFor(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the loop hangs", what)
	}
}

// TestRunFIFOAtDrainFile drives the real loop with a FIFO planted at
// drain_file: the loop goes on polling and applying
// health, the file is reported once, and the loop stops when told.
func TestRunFIFOAtDrainFile(t *testing.T) {
	r, path := drainRig(t, "10.0.0.100/32")
	// The loop polls and the watcher looks as fast as they go: the FIFO
	// must neither stop the one nor be reported more than once by the other.
	r.d.env.newTicker = func(time.Duration) ticker { return busyTicker{} }
	writeDrain(t, path, false) // read at start: a FIFO there at start drains all (TestBadDrainFileAtStartDrainsAll)
	r.health.polled = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.d.Run(ctx) }()
	waitFor(t, "poll", r.health.polled)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		waitFor(t, "poll", r.health.polled)
	}
	// Health still decides: the two VIPs not on the interface came up, and
	// the watcher (every drain.Every) found the FIFO.
	for r.link.text() != "10.0.0.100 10.0.0.101 10.0.0.102" || !strings.Contains(r.d.Status().Drain.Error, "FIFO") {
		waitFor(t, "poll", r.health.polled)
	}
	cancel()
	stopped := make(chan struct{})
	go func() {
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		close(stopped)
	}()
	for {
		select {
		case <-r.health.polled: // a poll in flight when cancelled
			continue
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatal("Run does not stop with a FIFO at drain_file")
		}
		break
	}
	if n := r.count(logrus.ErrorLevel, "cannot read the drain file"); n != 1 {
		t.Errorf("FIFO reported %d times, want once", n)
	}
}

// TestRunAppliesDrainsBeforeTheFirstTick: Run waits for the watcher's
// first answer, so a restarted rhi never announces a drained VIP, even
// for one tick.
func TestRunAppliesDrainsBeforeTheFirstTick(t *testing.T) {
	r, path := drainRig(t)
	r.d.cfg.PollInterval = time.Hour
	writeDrain(t, path, false, "10.0.0.101")
	var writes []string // what the interface held when the first tick ended
	ready := make(chan struct{})
	r.d.env.ready = func() { writes = append(writes, r.link.text()); close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.d.Run(ctx) }()
	waitFor(t, "first tick", ready)
	cancel()
	<-done
	if len(writes) != 1 || writes[0] != "10.0.0.100 10.0.0.102" {
		t.Errorf("after the first tick the interface held %q, want the drained 10.0.0.101 never added", writes)
	}
	if w := r.link.writeCount(); w != 2 {
		t.Errorf("%d interface writes, want 2 (the two VIPs not drained)", w)
	}
}

// TestReloadMovesTheDrainFile: a reload that changes drain_file has the
// watcher follow it; what the old file drained no longer counts.
func TestReloadMovesTheDrainFile(t *testing.T) {
	r, path := drainRig(t)
	writeDrain(t, path, false, "10.0.0.100")
	r.look(t)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")

	next := seed(config.Withdraw)
	next.DrainFile = filepath.Join(t.TempDir(), "drain")
	writeDrain(t, next.DrainFile, false, "10.0.0.102")
	r.d.applyReload(next)
	r.look(t)
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101")
	if st := r.d.Status(); st.Drain.File != next.DrainFile || st.Drain.Count != 1 {
		t.Errorf("drain status after the move: %+v", st.Drain)
	}
}
