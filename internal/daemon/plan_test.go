package daemon

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/apisix/apisixtest"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// TestReloadPlansTheNewKeys: the loop polls a plan of its keys, made at
// each config. After a reload that changes the keys (a resource under a
// second prefix, a repeated key, new resources, a key that ParseRef
// rejects), and after polls of other keys on the same client (`rhi
// verify`'s), every tick's snapshot is what an unplanned Poll of the
// config's keys says, and holds no key of the old config.
func TestReloadPlansTheNewKeys(t *testing.T) {
	srv := apisixtest.New()
	ts := srv.Start()
	defer srv.Close()
	healthy := apisixtest.Node{IP: "10.1.0.1", Port: 80, Status: "healthy"}
	sick := apisixtest.Node{IP: "10.1.0.2", Port: 80, Status: "unhealthy"}
	for _, key := range []string{api, auth, admin, primary, reserve, "/apisix/routes/r1"} {
		ref, _ := apisix.ParseRef(key)
		srv.SetNodes(ref, healthy, sick)
	}
	srv.SetNodes(apisix.Ref{Type: "upstreams", ID: "new"}, sick)

	cfg := seed(config.Withdraw)
	cfg.ControlURL = ts.URL
	client, err := apisix.NewClient(ts.URL, apisix.Options{Mode: apisix.ModeList, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	r := newRig(t, cfg, newFakeLink())
	r.d.health = client
	check := func(step string, keys ...string) {
		t.Helper()
		got := describeSnap(r.d.polls.last.snap)
		want := describeSnap(client.Poll(context.Background(), r.d.plan.Upstreams()))
		if !maps.Equal(got, want) {
			t.Fatalf("%s: planned poll %v, unplanned %v", step, got, want)
		}
		if k := slices.Sorted(maps.Keys(got)); !slices.Equal(k, slices.Sorted(slices.Values(keys))) {
			t.Fatalf("%s: snapshot of %q, want %q", step, k, keys)
		}
	}

	r.tick(t)
	check("first config", admin, api, primary, reserve, auth)
	if srv.ListRequests() == 0 {
		t.Fatal("the client never read the list: the plan's lookup went untested")
	}

	next := seed(config.Withdraw)
	next.ControlURL = ts.URL
	bad := health.Upstream{Key: "/apisix/upstreams/.."}
	next.VIPs = []config.VIP{
		vipCfg("10.0.0.100/32", config.All, "/other/upstreams/api", "/apisix/upstreams/new"),
		vipCfg("10.0.0.103/32", config.Any, "/apisix/routes/r1", "/other/upstreams/api", api),
		{Address: netip.MustParsePrefix("10.0.0.104/32"), Upstreams: []health.Upstream{bad}, Condition: config.All, Rise: 1, Fall: 1},
	}
	r.d.applyReload(next)
	r.tick(t)
	want := []string{api, "/apisix/routes/r1", "/apisix/upstreams/..", "/apisix/upstreams/new", "/other/upstreams/api"}
	check("reloaded", want...)
	snap := r.d.polls.last.snap
	for key, verdict := range map[string]health.Verdict{
		"/other/upstreams/api": health.Up, api: health.Up, "/apisix/upstreams/new": health.Down,
		"/apisix/routes/r1": health.Up, "/apisix/upstreams/..": health.Failed,
	} {
		if snap[key].Verdict != verdict {
			t.Errorf("reloaded: %s is %v (%v), want %v", key, snap[key].Verdict, snap[key].Err, verdict)
		}
	}

	// Another caller's poll of other keys leaves the loop's plan alone.
	other := health.Upstreams("/apisix/upstreams/new", admin)
	if got := client.Poll(context.Background(), other); len(got) != 2 || got[admin].Verdict != health.Up {
		t.Fatalf("verify's poll: %v", describeSnap(got))
	}
	srv.SetAllStatus(apisix.Ref{Type: "upstreams", ID: "new"}, "healthy")
	r.tick(t)
	check("after another caller's poll", want...)
	if v := r.d.polls.last.snap["/apisix/upstreams/new"].Verdict; v != health.Up {
		t.Fatalf("new is %v after it turned healthy", v)
	}

	r.d.applyReload(seed(config.Withdraw))
	r.tick(t)
	check("reloaded back", admin, api, primary, reserve, auth)
}

// describeSnap writes each Result of snap as text, error included.
func describeSnap(snap health.Snapshot) map[string]string {
	out := make(map[string]string, len(snap))
	for k, r := range snap {
		out[k] = fmt.Sprintf("%v %d/%d %v", r.Verdict, r.Healthy, r.Total, r.Err)
	}
	return out
}
