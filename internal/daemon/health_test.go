package daemon

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/status"
	"github.com/rhi-daemon/rhi/internal/vip"
)

// TestInterfaceWriteErrors: every failed write is counted, and the ticks in
// a row whose write failed; a good write ends the run, not the total.
func TestInterfaceWriteErrors(t *testing.T) {
	link := newFakeLink()
	link.failAdd[netip.MustParsePrefix("10.0.0.100/32")] = true
	r := newRig(t, seed(config.Withdraw), link)
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	for i := 1; i <= 3; i++ {
		r.tick(t)
		in := r.d.Status().Interface
		if in.WriteErrors != uint64(i) || in.FailedWrites != i {
			t.Fatalf("tick %d: write_errors_total %d, consecutive_failed_writes %d; want %d, %d", i, in.WriteErrors, in.FailedWrites, i, i)
		}
	}
	link.do(func(l *fakeLink) { clear(l.failAdd) })
	r.tick(t)
	if in := r.d.Status().Interface; in.WriteErrors != 3 || in.FailedWrites != 0 {
		t.Errorf("after a good write: write_errors_total %d, consecutive_failed_writes %d; want 3, 0", in.WriteErrors, in.FailedWrites)
	}
}

// TestSettledPolls: a poll that settles no VIP is counted; the time of the
// last one that settled any stays; one settled VIP is enough.
func TestSettledPolls(t *testing.T) {
	r := newRig(t, seed(config.Withdraw), newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	settled := r.clock.now()
	st := r.d.Status()
	if !st.ControlAPI.LastSettled.Equal(settled) || st.ControlAPI.UnsettledPolls != 0 || st.ControlAPI.MaxFailedPolls != 3 {
		t.Fatalf("after a good poll: %+v", st.ControlAPI)
	}
	if !st.LastTick.Equal(settled) {
		t.Errorf("last_tick %v, want %v", st.LastTick, settled)
	}
	r.health.down()
	r.tick(t)
	r.tick(t)
	st = r.d.Status()
	if !st.ControlAPI.LastSettled.Equal(settled) || st.ControlAPI.UnsettledPolls != 2 {
		t.Fatalf("after two failed polls: last settled %v (want %v), unsettled %d (want 2)", st.ControlAPI.LastSettled, settled, st.ControlAPI.UnsettledPolls)
	}
	r.health.set(health.Down, api) // one VIP of three settled
	r.tick(t)
	st = r.d.Status()
	if !st.ControlAPI.LastSettled.Equal(r.clock.now()) || st.ControlAPI.UnsettledPolls != 0 {
		t.Errorf("after a poll settling one VIP: %+v", st.ControlAPI)
	}
}

// TestSettledNoVIPs: with no VIPs there is nothing to settle; the loop is
// not reported as stuck.
func TestSettledNoVIPs(t *testing.T) {
	cfg := seed(config.Withdraw)
	cfg.VIPs = nil
	r := newRig(t, cfg, newFakeLink())
	r.tick(t)
	r.tick(t)
	if api := r.d.Status().ControlAPI; api.UnsettledPolls != 0 || api.LastSettled.IsZero() {
		t.Errorf("no VIPs: %+v", api)
	}
}

// readOnly is the fake link seen through a dry run: Set reports the
// interface as it is and changes nothing.
type readOnly struct{ *fakeLink }

func (r readOnly) Set(ctx context.Context, want vip.Desired) (vip.State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := checkDesired(want); err != nil {
		return vip.State{}, err
	}
	return r.state(&want), nil
}

// TestDryRunQuiet: a dry run holds BIRD to the interface as it is, so the
// changes it deliberately does not make are no disagreement, and Status
// says it is a dry run. The same host without --dry-run disagrees (it
// cannot add the VIP here: the link refuses), which shows the check bites.
func TestDryRunQuiet(t *testing.T) {
	for _, dry := range []bool{true, false} {
		link := newFakeLink("10.0.0.101/32") // wanted withdrawn: auth is down
		var ann Announcer = readOnly{link}
		if !dry {
			link.failAdd[netip.MustParsePrefix("10.0.0.100/32")] = true
			ann = link
		}
		b := newFakeBird(link)
		log, hook := logtest.NewNullLogger()
		log.Level = logrus.DebugLevel
		clk := &clock{t: time.Unix(1_700_000_000, 0)}
		cfg := seed(config.Withdraw)
		cfg.Bird.Socket = "/run/bird/bird.ctl"
		hs := newFakeHealth()
		hs.set(health.Up, api, admin, primary, reserve)
		hs.set(health.Down, auth)
		d := New(cfg, Deps{Health: hs, Announcer: ann, Log: log, Now: clk.now, Confirmer: b, DryRun: dry})
		d.tick(context.Background())
		job := d.confirmJob()
		want := map[string]router.Expectation{"10.0.0.100/32": router.Present, "10.0.0.101/32": router.Absent, "10.0.0.102/32": router.Present}
		if dry {
			want = map[string]router.Expectation{"10.0.0.100/32": router.Absent, "10.0.0.101/32": router.Present, "10.0.0.102/32": router.Absent}
		}
		for _, v := range job.In.VIPs {
			if v.Expected != want[v.Prefix.String()] {
				t.Errorf("dry run %v: %s expected %s, want %s", dry, v.Prefix, v.Expected, want[v.Prefix.String()])
			}
		}
		for range 2 {
			clk.advance(confirm.Grace)
			d.conf.once(context.Background(), job)
		}
		n := 0
		for _, e := range hook.AllEntries() {
			if strings.Contains(e.Message, "BIRD disagrees") {
				n++
			}
		}
		if dry && n != 0 {
			t.Errorf("dry run logged %d \"BIRD disagrees\" lines", n)
		}
		if !dry && n == 0 {
			t.Errorf("a real run that could not add a VIP logged no disagreement")
		}
		if st := d.Status(); st.DryRun != dry || st.SchemaVersion != status.SchemaVersion {
			t.Errorf("dry run %v: status says dry_run %v, schema_version %d", dry, st.DryRun, st.SchemaVersion)
		}
	}
	d := New(seed(config.Withdraw), Deps{Health: newFakeHealth(), Announcer: newFakeLink(), DryRun: true})
	if st := d.Status(); st.Ready || !st.DryRun || st.SchemaVersion != status.SchemaVersion {
		t.Errorf("before the first tick: %+v", st)
	}
}

// TestDryRunShutdown: a dry run with on_shutdown withdraw withdraws
// nothing, so it neither claims to have withdrawn the VIPs nor waits for
// BIRD to confirm a withdrawal that was not made.
func TestDryRunShutdown(t *testing.T) {
	link := newFakeLink("10.0.0.100/32")
	b := newFakeBird(link)
	log, hook := logtest.NewNullLogger()
	cfg := seed(config.Withdraw)
	cfg.OnShutdown = "withdraw"
	hs := newFakeHealth()
	hs.set(health.Up, api, auth, admin, primary, reserve)
	d := New(cfg, Deps{Health: hs, Announcer: readOnly{link}, Log: log, Confirmer: b, DryRun: true})
	d.tick(context.Background())
	if err := d.shutdown(); err != nil {
		t.Fatal(err)
	}
	if b.checks != 0 || link.text() != "10.0.0.100" {
		t.Errorf("dry-run shutdown: %d BIRD checks, interface %q; want none and 10.0.0.100", b.checks, link.text())
	}
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "VIPs withdrawn") || strings.Contains(e.Message, "BIRD") {
			t.Errorf("dry-run shutdown logged %q", e.Message)
		}
	}
}

// TestBirdAwayDropsSessions: once BIRD cannot be asked, /status lists no
// BGP session rather than the states BIRD reported before it went away.
func TestBirdAwayDropsSessions(t *testing.T) {
	r, b := newConfirmRig(t, newFakeLink())
	r.health.set(health.Up, api, auth, admin, primary, reserve)
	r.tick(t)
	r.confirm(t)
	if p := r.d.Status().Bird.Protocols; len(p) != 1 || !p[0].Established {
		t.Fatalf("BIRD up: protocols %+v", p)
	}
	b.mu.Lock()
	b.err = errors.New("dial unix /run/bird/bird.ctl: connect: connection refused")
	b.mu.Unlock()
	r.confirm(t)
	if st := r.d.Status().Bird; st.Error == "" || st.Protocols != nil {
		t.Errorf("BIRD away: error %q, protocols %+v; want an error and no protocols", st.Error, st.Protocols)
	}
}
