//go:build integration

package anycast

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// TestHostileDrainFile: the rhi user, or anyone
// who can write the state directory, puts a FIFO at drain_file. The loop
// keeps polling and applying health, the file is reported once, `rhi
// drain` fails at once saying why, and SIGTERM stops rhi. A symbolic link
// there is not followed; a regular file again is applied. rhi starts with
// a FIFO there too, and then, the drains being unknown, treats every VIP
// as drained until the file can be read.
func TestHostileDrainFile(t *testing.T) {
	cfg := site.Config{VIPs: site.Seed}
	_, s := newFaultSite(t, cfg, faultSite{})
	drain := filepath.Join(s.DC.Dir, "drain")
	all := "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32"
	s.holds(t, all)
	if err := syscall.Mkfifo(drain, 0o644); err != nil {
		t.Fatal(err)
	}
	st := s.statusWhen(t, "reported the FIFO", func(st status.Status) error {
		if !strings.Contains(st.Drain.Error, "a FIFO") {
			return errorf("drain error %q", st.Drain.Error)
		}
		return nil
	})
	st = s.pollsAfter(t, st, 5)
	// Health still decides.
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.101/32 10.0.0.102/32")
	if err := s.SetAll("healthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, all)

	ctx := context.Background()
	out, code, err := s.RHICommand(ctx, "drain", "--no-wait", "10.0.0.100")
	if err != nil || code != 1 || !strings.Contains(out, "a FIFO") {
		t.Errorf("rhi drain with a FIFO at drain_file: exit %d, %v, output %q; want 1 naming the FIFO", code, err, out)
	}
	s.pollsAfter(t, st, 5)
	s.logOnce(t, "rhi-error.log", 1, "cannot read the drain file", "FIFO")

	// A link to a file that drains everything: refused, not followed.
	target := filepath.Join(s.DC.Dir, "elsewhere")
	if err := os.WriteFile(target, []byte("all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, drain); err != nil {
		t.Fatal(err)
	}
	st = s.statusWhen(t, "reported the link", func(st status.Status) error {
		if !strings.Contains(st.Drain.Error, "symbolic link") {
			return errorf("drain error %q", st.Drain.Error)
		}
		return nil
	})
	s.pollsAfter(t, st, 3)
	s.holds(t, all)

	// A regular file again: its drain applies, the error clears.
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(drain, []byte("10.0.0.101\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.102/32")
	s.statusWhen(t, "cleared the drain error", func(st status.Status) error {
		if st.Drain.Error != "" {
			return errorf("drain error %q", st.Drain.Error)
		}
		return nil
	})

	// And with a FIFO there again, SIGTERM stops rhi.
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(drain, 0o644); err != nil {
		t.Fatal(err)
	}
	s.statusWhen(t, "reported the FIFO again", func(st status.Status) error {
		if !strings.Contains(st.Drain.Error, "a FIFO") {
			return errorf("drain error %q", st.Drain.Error)
		}
		return nil
	})
	s.holds(t, "10.0.0.100/32 10.0.0.102/32") // the last good drains stay
	if err := s.StopRHI(); err != nil {
		t.Errorf("SIGTERM with a FIFO at drain_file: %v", err)
	}

	// Started with the FIFO there: every VIP drained until it reads.
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "")
	s.statusWhen(t, "reported every VIP drained", func(st status.Status) error {
		if !st.Drain.All || !strings.Contains(st.Drain.Error, "every VIP treated as drained") {
			return errorf("drain %+v", st.Drain)
		}
		return nil
	})
	if err := os.Remove(drain); err != nil {
		t.Fatal(err)
	}
	s.holds(t, all)
}
