//go:build integration

package anycast

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird/birdtest"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// birdFault is one fault of BIRD's control socket as rhi meets it.
type birdFault struct {
	want   string                               // rhi's BIRD error holds it while the fault lasts
	start  func(t *testing.T)                   // nil: the fault was there when rhi started
	during func(t *testing.T, st status.Status) // more checks while it lasts; st is the first faulty status
	end    func(t *testing.T)
}

// cannotConfirm is the line rhi logs when a confirmation cannot reach BIRD.
const cannotConfirm = "cannot confirm through BIRD; the interface is still managed"

// run puts f on the seed's site s (BIRD agreeing, or already faulty when
// f.start is nil) and checks rhi's promise: it reports the fault in
// /status and /metrics, logs it once, keeps the interface following health
// (judged at the interface: the peer hears nothing new while BIRD is
// faulty), never exits, and confirms every VIP again once the fault ends.
func (f birdFault) run(t *testing.T, w *world, s *Site) {
	t.Helper()
	logged := s.logCount(t, "rhi-error.log", cannotConfirm)
	back := s.logCount(t, "rhi-main.log", "BIRD reachable again")
	if f.start != nil {
		f.start(t)
		logged++
	}
	// A change makes rhi confirm at once rather than on its slow timer.
	if err := s.SetAll("unhealthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.101/32 10.0.0.102/32")
	st := s.birdFails(t, f.want)
	if f.during != nil {
		f.during(t, st)
	}
	s.checksAfter(t, st, 2)
	s.logOnce(t, "rhi-error.log", logged, cannotConfirm)
	if err := s.SetAll("healthy", "/apisix/upstreams/api"); err != nil {
		t.Fatal(err)
	}
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	s.alive(t)

	ended := time.Now()
	f.end(t)
	s.birdAgrees(t, len(site.Seed), ended)
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.logOnce(t, "rhi-error.log", logged, cannotConfirm)
	s.logOnce(t, "rhi-main.log", back+1, "BIRD reachable again")
	s.alive(t)
}

// TestFaultBirdSocketMissing: bird.socket names a path with nothing there
// from the start; rhi runs without BIRD until the socket appears.
func TestFaultBirdSocketMissing(t *testing.T) {
	var link string
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		edit: func(t *testing.T, s *Site, text string) string {
			link = filepath.Join(s.DC.Dir, "bird-link.ctl")
			return birdAt(link, 2*time.Second)(t, s, text)
		},
	})
	s.birdFails(t, "no such file or directory")
	s.holds(t, "10.0.0.100/32 10.0.0.101/32 10.0.0.102/32")
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)
	s.logOnce(t, "rhi-error.log", 1, cannotConfirm, "no such file or directory")
	birdFault{
		want: "no such file or directory",
		end:  func(t *testing.T) { pointSocket(t, link, s.DC.BirdSocket) },
	}.run(t, w, s)
}

// TestFaultBirdPermissionDenied runs rhi as root without the capabilities
// that let root ignore file permissions, so that a socket with mode 000
// refuses it as it refuses an unprivileged rhi.
func TestFaultBirdPermissionDenied(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		wrap: []string{"setpriv", "--bounding-set", "-dac_override,-dac_read_search"},
	})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	fi, err := os.Stat(s.DC.BirdSocket)
	if err != nil {
		t.Fatal(err)
	}
	mode := fi.Mode().Perm()
	t.Cleanup(func() { os.Chmod(s.DC.BirdSocket, mode) })
	birdFault{
		want: "permission denied",
		start: func(t *testing.T) {
			if err := os.Chmod(s.DC.BirdSocket, 0); err != nil {
				t.Fatal(err)
			}
		},
		end: func(t *testing.T) {
			if err := os.Chmod(s.DC.BirdSocket, mode); err != nil {
				t.Fatal(err)
			}
		},
	}.run(t, w, s)
}

// TestFaultBirdKilledAndRestarted kills BIRD outright and starts it again
// as the lab does; its sessions come back and rhi confirms again.
func TestFaultBirdKilledAndRestarted(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	d := s.DC
	birdFault{
		want:  "connection refused",
		start: func(t *testing.T) { signalBird(t, d, syscall.SIGKILL) },
		during: func(t *testing.T, _ status.Status) {
			w.peerSees(t, "no route", seedAddrs()...)
		},
		end: func(t *testing.T) {
			_, err := d.Start(context.Background(), "bird-restarted", "bird", "-f", "-c", d.BirdConfig,
				"-s", d.BirdSocket, "-P", filepath.Join(d.Dir, "bird.pid"))
			if err != nil {
				t.Fatal(err)
			}
		},
	}.run(t, w, s)
}

// TestFaultBirdStalled stops BIRD (SIGSTOP) for longer than bird.timeout:
// every confirmation times out, while the poll loop keeps turning and
// applying flips; SIGCONT ends it.
func TestFaultBirdStalled(t *testing.T) {
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		edit: func(t *testing.T, s *Site, text string) string {
			return birdAt(s.DC.BirdSocket, 2*time.Second)(t, s, text)
		},
	})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	d := s.DC
	t.Cleanup(func() { syscall.Kill(birdPid(t, d), syscall.SIGCONT) })
	birdFault{
		want:  "deadline exceeded",
		start: func(t *testing.T) { signalBird(t, d, syscall.SIGSTOP) },
		during: func(t *testing.T, st status.Status) {
			// The stall must not hold up polls or changes.
			st = s.pollsAfter(t, st, 10)
			if err := s.SetAll("unhealthy", "/apisix/upstreams/admin"); err != nil {
				t.Fatal(err)
			}
			s.holds(t, "10.0.0.102/32")
			if err := s.SetAll("healthy", "/apisix/upstreams/admin"); err != nil {
				t.Fatal(err)
			}
			s.holds(t, "10.0.0.101/32 10.0.0.102/32")
			if !strings.Contains(st.Bird.Error, "deadline exceeded") {
				t.Errorf("while stalled, bird error %q", st.Bird.Error)
			}
		},
		end: func(t *testing.T) { signalBird(t, d, syscall.SIGCONT) },
	}.run(t, w, s)
}

// TestFaultBirdGarbage puts a fake BIRD that answers nonsense behind
// rhi's socket (a symlink, so the real BIRD can come back behind it).
func TestFaultBirdGarbage(t *testing.T) {
	var link string
	w, s := newFaultSite(t, site.Config{VIPs: site.Seed}, faultSite{
		edit: func(t *testing.T, s *Site, text string) string {
			link = filepath.Join(s.DC.Dir, "bird-link.ctl")
			pointSocket(t, link, s.DC.BirdSocket)
			return birdAt(link, 2*time.Second)(t, s, text)
		},
	})
	s.birdAgrees(t, len(site.Seed), time.Time{})
	cases := []struct {
		name  string
		reply string // to "show protocols all"
		want  string
	}{
		{"not the protocol", "this is not BIRD\n", "has no reply code"},
		{"half a reply", "2002-Name       Proto      Table      State  Since         Info\n1002-peer_4     BGP   ", "deadline exceeded"},
		{"error reply", "8003 Access denied\n", "bird error 8003: Access denied"},
		{"cut short", "1002-peer_4     BGP        ---        up     16:55:46.000  Established\n", "deadline exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := birdtest.NewServer(t, map[string]string{"show protocols all": c.reply})
			birdFault{
				want:  c.want,
				start: func(t *testing.T) { pointSocket(t, link, fake.Path) },
				end:   func(t *testing.T) { pointSocket(t, link, s.DC.BirdSocket) },
			}.run(t, w, s)
			if n := len(fake.Commands()); n < 3 {
				t.Errorf("the fake BIRD got %d commands: %q", n, fake.Commands())
			}
		})
	}
}
