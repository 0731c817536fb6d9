package daemon

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/drain"
)

func drainRig(t *testing.T, present ...string) (*rig, string) {
	t.Helper()
	cfg := seed(config.Withdraw)
	cfg.DrainFile = filepath.Join(t.TempDir(), "drain")
	r := newRig(t, cfg, newFakeLink(present...))
	r.health.set(apisix.Up, api, auth, admin, primary, reserve)
	return r, cfg.DrainFile
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
	r.d.drainCheck(context.Background()) // between polls
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
	r.d.drainCheck(context.Background())
	r.expect(t, "")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r.d.drainCheck(context.Background())
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
	r.tick(t) // the first tick of a restarted rhi
	r.expect(t, "10.0.0.101 10.0.0.102")
}

func TestBadDrainFileKeepsDrains(t *testing.T) {
	r, path := drainRig(t)
	writeDrain(t, path, false, "10.0.0.100")
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if err := os.WriteFile(path, []byte("10.0.0.100\nbanana\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.tick(t)
	r.tick(t)
	r.expect(t, "10.0.0.101 10.0.0.102")
	if n := r.count(logrus.ErrorLevel, "cannot read the drain file"); n != 1 {
		t.Errorf("bad drain file logged %d times, want once", n)
	}
	if st := r.d.Status(); st.Drain.Error == "" || !st.VIPs[0].Drained {
		t.Errorf("status = %+v", st.Drain)
	}
}

func TestDrainOfUnknownVIPIsReported(t *testing.T) {
	r, path := drainRig(t)
	writeDrain(t, path, false, "192.0.2.50")
	r.tick(t)
	r.expect(t, "10.0.0.100 10.0.0.101 10.0.0.102")
	if n := r.count(logrus.WarnLevel, "not in the configuration"); n != 1 {
		t.Errorf("unknown drained VIP warned %d times, want 1", n)
	}
}
