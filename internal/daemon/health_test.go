package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/confirm"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/verify"
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

func (r readOnly) Set(ctx context.Context, owned map[netip.Prefix]bool) (vip.State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state(owned), nil
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
		want := map[string]verify.Expectation{"10.0.0.100/32": verify.Present, "10.0.0.101/32": verify.Absent, "10.0.0.102/32": verify.Present}
		if dry {
			want = map[string]verify.Expectation{"10.0.0.100/32": verify.Absent, "10.0.0.101/32": verify.Present, "10.0.0.102/32": verify.Absent}
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
		if st := d.Status(); st.DryRun != dry || st.SchemaVersion != SchemaVersion {
			t.Errorf("dry run %v: status says dry_run %v, schema_version %d", dry, st.DryRun, st.SchemaVersion)
		}
	}
	d := New(seed(config.Withdraw), Deps{Health: newFakeHealth(), Announcer: newFakeLink(), DryRun: true})
	if st := d.Status(); st.Ready || !st.DryRun || st.SchemaVersion != SchemaVersion {
		t.Errorf("before the first tick: %+v", st)
	}
}

// TestStatusWire: durations are float seconds named for their unit, a
// time that has not happened is left out, and the JSON reads back as it
// was written.
func TestStatusWire(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := Status{
		SchemaVersion: SchemaVersion, Ready: true, LastTick: t0,
		ControlAPI: APIStatus{PollInterval: 3 * time.Second, Timeout: 1500 * time.Millisecond, PollDuration: 25 * time.Millisecond, LastPoll: t0},
		Bird:       BirdStatus{Enabled: true, LastCheck: t0},
		VIPs: []VIPStatus{
			{Address: "10.0.0.100/32", Since: t0, Bird: &VIPConfirm{Agrees: true, Latency: 40 * time.Millisecond, CheckedAt: t0}},
			{Address: "10.0.0.101/32", Bird: &VIPConfirm{Agrees: false, DisagreeingSince: t0, CheckedAt: t0}},
		},
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	for _, want := range []string{`"schema_version":2`, `"poll_interval_seconds":3`, `"timeout_seconds":1.5`, `"poll_duration_seconds":0.025`,
		`"confirm_latency_seconds":0.04`, `"disagreeing_since":"2026-12-02T12:00:00Z"`, `"last_tick":"2026-12-02T12:00:00Z"`} {
		if !strings.Contains(body, want) {
			t.Errorf("JSON lacks %s:\n%s", want, body)
		}
	}
	for _, bad := range []string{"0001-01-01", "_ns", `"last_settled_poll"`, `"last_ok"`} {
		if strings.Contains(body, bad) {
			t.Errorf("JSON has %s:\n%s", bad, body)
		}
	}
	// Exactly one of the two VIPs has a disagreement, one a latency.
	if n := strings.Count(body, "disagreeing_since"); n != 1 {
		t.Errorf("disagreeing_since appears %d times, want 1", n)
	}
	if n := strings.Count(body, "confirm_latency_seconds"); n != 1 {
		t.Errorf("confirm_latency_seconds appears %d times, want 1", n)
	}
	var back Status
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back, cmpopts.IgnoreUnexported(VIPConfirm{})); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
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
