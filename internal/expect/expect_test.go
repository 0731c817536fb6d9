package expect

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/router"
)

var (
	ex1 = netip.MustParsePrefix("10.255.0.1/32")
	ex2 = netip.MustParsePrefix("10.255.0.2/32")
	ex3 = netip.MustParsePrefix("10.255.0.3/32")
)

func expectConfig(vips ...config.VIP) *config.Config {
	return &config.Config{
		ControlURL: "http://127.0.0.1:9090", ControlSocket: "/run/rhi/control.sock", Interface: "rhi0",
		FailurePolicy: config.FailurePolicy{NoChecker: "healthy"},
		VIPs:          vips,
	}
}

func expectVIP(p netip.Prefix, cond config.Condition, ups ...string) config.VIP {
	return config.VIP{Address: p, Upstreams: health.Upstreams(ups...), Condition: cond, Rise: 1, Fall: 1}
}

var cmpWant = cmp.Options{cmpopts.EquateComparable(netip.Prefix{}), cmpopts.EquateEmpty()}

func TestFromDaemon(t *testing.T) {
	cfg := expectConfig(expectVIP(ex1, config.All, "/apisix/upstreams/a"), expectVIP(ex3, config.All, "/apisix/upstreams/c"))
	run := Running{
		Interface:   "rhi1",
		Withdrawing: []string{ex3.String()},
		VIPs:        []RunningVIP{{Address: ex1.String(), Desired: true}, {Address: ex2.String()}},
	}
	got, err := FromDaemon(cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	want := &Want{
		Source: SourceDaemon, Address: "/run/rhi/control.sock", Interface: "rhi1",
		VIPs: []Wanted{{Prefix: ex1, Present: true, Judged: true}, {Prefix: ex2, Judged: true}, {Prefix: ex3, Judged: true}},
		Notes: []string{
			"dropped from the config by a reload and still being withdrawn (checked as withdrawn): 10.255.0.3/32",
			"in the running daemon but no longer in the config file (checked): 10.255.0.2/32",
			`the running daemon manages interface "rhi1", the config file names "rhi0" (a restart applies it)`,
		},
	}
	if diff := cmp.Diff(want, got, cmpWant); diff != "" {
		t.Errorf("want (-want +got):\n%s", diff)
	}

	// A VIP of the file the daemon does not run yet is noted, not checked.
	got, err = FromDaemon(expectConfig(expectVIP(ex1, config.All, "/apisix/upstreams/a"), expectVIP(ex2, config.All, "/apisix/upstreams/b")),
		Running{VIPs: []RunningVIP{{Address: ex1.String()}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Interface != "rhi0" || len(got.VIPs) != 1 || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "not in the running daemon (reload it to apply), not checked: 10.255.0.2/32") {
		t.Errorf("got %+v", got)
	}

	if _, err := FromDaemon(cfg, Running{VIPs: []RunningVIP{{Address: "10.255.0.300/32"}}}); err == nil || !strings.Contains(err.Error(), `vip "10.255.0.300/32"`) {
		t.Errorf("bad address from the daemon: %v", err)
	}
}

// fakePoller answers every poll with snap and counts the polls.
type fakePoller struct {
	snap  health.Snapshot
	polls int
}

func (f *fakePoller) Poll(_ context.Context, keys []health.Upstream) health.Snapshot {
	f.polls++
	out := health.Snapshot{}
	for _, u := range keys {
		if r, ok := f.snap[u.Key]; ok {
			out[u.Key] = r
		} else {
			out[u.Key] = health.Result{Verdict: health.Failed, Err: errors.New("connection refused")}
		}
	}
	return out
}

func TestFromPoll(t *testing.T) {
	cfg := expectConfig(
		expectVIP(ex1, config.All, "/apisix/upstreams/a"),
		expectVIP(ex2, config.All, "/apisix/upstreams/b"),
		expectVIP(ex3, config.Any, "/apisix/upstreams/c", "/apisix/upstreams/missing"),
	)
	p := &fakePoller{snap: health.Snapshot{
		"/apisix/upstreams/a": {Verdict: health.Up, Healthy: 2, Total: 2},
		"/apisix/upstreams/b": {Verdict: health.Down, Total: 2},
		"/apisix/upstreams/c": {Verdict: health.Down, Total: 2},
	}}
	got, err := FromPoll(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	want := &Want{
		Source: SourcePoll, Address: "http://127.0.0.1:9090", Interface: "rhi0",
		VIPs: []Wanted{
			{Prefix: ex1, Present: true, Judged: true},
			{Prefix: ex2, Judged: true},
			{Prefix: ex3, Why: "health unknown (upstreams/missing: failed: connection refused)"},
		},
	}
	if diff := cmp.Diff(want, got, cmpWant); diff != "" {
		t.Errorf("want (-want +got):\n%s", diff)
	}

	// With the fail-open guard on, an unavailable VIP may be in last
	// resort or withdrawn: one poll cannot tell, so it is held to the
	// interface.
	cfg.FailOpen.MinOtherSites = 1
	got, err = FromPoll(context.Background(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	if v := got.VIPs[1]; v.Judged || !strings.Contains(v.Why, "fail-open guard") {
		t.Errorf("guard on, unavailable VIP: %+v", v)
	}
	cfg.FailOpen.MinOtherSites = 0

	// Nothing answered: no expectation at all.
	_, err = FromPoll(context.Background(), cfg, &fakePoller{})
	if err == nil || !strings.Contains(err.Error(), "control API at http://127.0.0.1:9090 did not answer: connection refused") {
		t.Errorf("API away: %v", err)
	}

	// No upstream to ask: no poll.
	none := &fakePoller{}
	if _, err := FromPoll(context.Background(), expectConfig(), none); err != nil || none.polls != 0 {
		t.Errorf("no VIPs: err %v, %d polls", err, none.polls)
	}
}

// TestWantInput: a VIP not judged is held to the interface; an address
// nobody manages is checked as unmanaged and noted.
func TestWantInput(t *testing.T) {
	w := &Want{VIPs: []Wanted{{Prefix: ex1, Present: true, Judged: true}, {Prefix: ex2, Why: "health unknown"}}, Notes: []string{"interface note"}}
	in := w.Input([]netip.Prefix{ex2, ex3}, []string{"peer_b"}, 0)
	want := router.Input{
		VIPs: []router.VIP{
			{Prefix: ex1, Expected: router.Present},
			{Prefix: ex2, Expected: router.Present, OnInterface: true},
			{Prefix: ex3, Expected: router.Unmanaged, OnInterface: true},
		},
		Protocols: []string{"peer_b"},
	}
	if diff := cmp.Diff(want, in, cmpWant); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	wantNotes := []string{"interface note", "on the interface but not managed by rhi (checked: BIRD must not export them): 10.255.0.3/32"}
	if diff := cmp.Diff(wantNotes, w.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if nj := w.NotJudged(); len(nj) != 1 || nj[0].Prefix != ex2 || !nj[0].Present {
		t.Errorf("not judged %+v, want %s held present from the interface", nj, ex2)
	}
}
