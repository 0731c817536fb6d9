package guardbird

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../bird/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	vip4 = netip.MustParsePrefix("10.255.0.10/32")
	vip6 = netip.MustParsePrefix("fd00:255::10/128")
	gone = netip.MustParsePrefix("10.255.0.11/32")
)

const notFound = "8001 Network not found\n"

func TestAsk(t *testing.T) {
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                                                     fixture(t, "bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
		bird.GuardCommand(vip4, "rhi_guard4"):                                    fixture(t, "tiers/bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-and-two-sites.txt"),
		bird.GuardCommand(gone, "rhi_guard4"):                                    notFound,
		bird.GuardCommand(netip.MustParsePrefix("10.255.0.12/32"), "rhi_guard4"): "9001 syntax error\n",
	})
	a := Socket{Path: srv.Path, Timeout: 10 * time.Second}.Ask(context.Background(), []netip.Prefix{vip4, gone, netip.MustParsePrefix("10.255.0.12/32")})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	if a.Self != 65001 {
		t.Errorf("self %d, want 65001", a.Self)
	}
	if got := a.Origins[vip4]; !slices.Equal(got, []uint32{65002, 65003}) {
		t.Errorf("%s: origins %v, want [65002 65003]", vip4, got)
	}
	if got, ok := a.Origins[gone]; !ok || len(got) != 0 {
		t.Errorf("%s: origins %v (known %v), want none, known", gone, got, ok)
	}
	if _, ok := a.Origins[netip.MustParsePrefix("10.255.0.12/32")]; ok || a.Failed != 1 || a.VIPErr == nil {
		t.Errorf("a BIRD error must leave the VIP unknown: %+v", a)
	}
}

func TestAskUnreachable(t *testing.T) {
	a := Socket{Path: t.TempDir() + "/nobird.ctl", Timeout: time.Second}.Ask(context.Background(), []netip.Prefix{vip4})
	if a.Err == nil || len(a.Origins) != 0 {
		t.Errorf("got %+v, want an error and no VIP known", a)
	}
}

// TestAskStalled: a BIRD that stops answering leaves the rest unknown, and
// every exchange has a deadline of its own, at most Timeout away. Timeout
// is generous, since the dial and "show protocols all" must succeed within
// it on a loaded machine too; the stalled exchange's deadline comes when
// the server stalls (birdtest.Deadlines), as a real one would end it.
func TestAskStalled(t *testing.T) {
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                  fixture(t, "bird2.0.12-show-protocols-all.viptable-up-vip.txt"),
		bird.GuardCommand(vip6, "rhi_guard6"): fixture(t, "tiers/bird2.0.12-tiers-show-route-vip6-table-rhi_guard6-all.two-sites.txt"),
	})
	srv.Stall(bird.GuardCommand(vip4, "rhi_guard4"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // longer than Timeout; bounds a failing run
	defer cancel()
	own := &ownDeadlines{Deadlines: birdtest.Deadlines{Timeout: 10 * time.Second, Stalled: srv.Stalled()}}
	s := Socket{Path: srv.Path, Timeout: own.Timeout, watch: func(c Execer) Execer { own.Execer = c; return own }}
	a := s.Ask(ctx, []netip.Prefix{vip4, vip6})
	if a.Err != nil || a.Failed != 2 || len(a.Origins) != 0 {
		t.Errorf("got %+v, want both unknown", a)
	}
	for _, p := range own.Problems {
		t.Error(p)
	}
	if want := []string{"restrict", "show protocols all", bird.GuardCommand(vip4, "rhi_guard4")}; !slices.Equal(srv.Commands(), want) {
		t.Errorf("commands %q, want %q", srv.Commands(), want)
	}
}

// ownDeadlines passes each exchange on to BIRD through Deadlines.
type ownDeadlines struct {
	Execer
	birdtest.Deadlines
}

func (o *ownDeadlines) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	ctx, cancel := o.Enter(ctx, cmd)
	defer cancel()
	return o.Execer.Exec(ctx, cmd)
}

func TestLocalAS(t *testing.T) {
	r := bird.Reply{Lines: []bird.Line{{Text: "    Local AS:         65001"}, {Text: "    Local AS:         65001"}}}
	if got := LocalAS(r); got != 65001 {
		t.Errorf("got %d", got)
	}
	r.Lines = append(r.Lines, bird.Line{Text: "  Local AS: 65009"})
	if got := LocalAS(r); got != 0 {
		t.Errorf("two ASes: got %d, want 0", got)
	}
}

// TestAskNoSession: while no BGP session of a VIP's family is Established
// (the router is down, BIRD has just restarted), the guard table is empty
// because nothing can fill it, not because no other site announces the
// VIP. Such a VIP must be unknown, never "nobody else": the guard would
// engage and announce an unhealthy VIP the moment the session comes up,
// and hold it for release.
func TestAskNoSession(t *testing.T) {
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                  fixture(t, "bird2.0.12-show-protocols-all-peer_b.peerdown-vip.txt"),
		bird.GuardCommand(vip4, "rhi_guard4"): notFound,
		bird.GuardCommand(vip6, "rhi_guard6"): notFound,
	})
	a := Socket{Path: srv.Path, Timeout: 2 * time.Second}.Ask(context.Background(), []netip.Prefix{vip4, vip6})
	if a.Err == nil || len(a.Origins) != 0 {
		t.Errorf("no session established: got %+v, want an error and no VIP known", a)
	}
}

// TestAskOneFamilyDown: a VIP of a family whose sessions are down is
// unknown; the other family's VIPs are answered.
func TestAskOneFamilyDown(t *testing.T) {
	r := bird.Reply{Code: bird.CodeOK, Lines: []bird.Line{
		{Code: 2002, Text: "Name       Proto      Table      State  Since         Info"},
		{Code: 1002, Text: "peer_4     BGP        ---        up     19:47:49.274  Established   "},
		{Code: 1006, Text: "  BGP state:          Established"},
		{Code: 1006, Text: "    Local AS:         65001"},
		{Code: 1006, Text: "  Channel ipv4"},
		{Code: 1006, Text: "    State:          UP"},
		{Code: 1002, Text: "peer_6     BGP        ---        start  19:47:49.274  Active        Socket: Connection refused"},
		{Code: 1006, Text: "  BGP state:          Active"},
		{Code: 1006, Text: "    Local AS:         65001"},
		{Code: 1006, Text: "  Channel ipv6"},
		{Code: 1006, Text: "    State:          DOWN"},
	}}
	e := replies{"show protocols all": r}
	a := AskOn(context.Background(), e, []netip.Prefix{vip4, vip6})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	if got, ok := a.Origins[vip4]; !ok || len(got) != 0 {
		t.Errorf("%s: origins %v (known %v), want none, known", vip4, got, ok)
	}
	if _, ok := a.Origins[vip6]; ok || a.Failed != 1 || a.VIPErr == nil {
		t.Errorf("%s must be unknown while no ipv6 session is established: %+v", vip6, a)
	}
}

// replies answers each command with its reply, and 8001 to the rest.
type replies map[string]bird.Reply

func (r replies) Exec(_ context.Context, cmd string) (bird.Reply, error) {
	if rep, ok := r[cmd]; ok {
		return rep, nil
	}
	return bird.Reply{Code: bird.CodeNetworkNotFound}, &bird.Error{Code: bird.CodeNetworkNotFound, Text: "Network not found"}
}

// TestAskBird3: BIRD 3 names a route's source and path otherwise than
// BIRD 2 ("source: BGP", "bgp_path"); the other site is counted all the
// same, never read as "nobody else announces it".
func TestAskBird3(t *testing.T) {
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                  fixture(t, "tiers/bird3.1.8-tiers-show-protocols-all.t3-unhealthy-other-site-announces.txt"),
		bird.GuardCommand(vip4, "rhi_guard4"): fixture(t, "tiers/bird3.1.8-tiers-show-route-vip-table-rhi_guard4-all.t3-unhealthy-other-site-announces.txt"),
	})
	a := Socket{Path: srv.Path, Timeout: 10 * time.Second}.Ask(context.Background(), []netip.Prefix{vip4})
	if a.Err != nil || a.Failed != 0 {
		t.Fatalf("%+v", a)
	}
	if got := a.Origins[vip4]; !slices.Equal(got, []uint32{65002}) {
		t.Errorf("%s: origins %v, want [65002]", vip4, got)
	}
	if a.Self != 65001 {
		t.Errorf("self %d, want 65001", a.Self)
	}
}

// TestAskUnreadable: a guard-table route in a form rhi does not know (here
// the path under a name no BIRD prints, then a route with no source) makes
// that VIP unknown, not "no other site", and the round goes on to the next
// VIP.
func TestAskUnreadable(t *testing.T) {
	t3 := fixture(t, "tiers/bird3.1.8-tiers-show-route-vip-table-rhi_guard4-all.t3-unhealthy-other-site-announces.txt")
	renamed := strings.ReplaceAll(t3, "bgp_path:", "bgp_as_path:")
	noSource := strings.ReplaceAll(strings.ReplaceAll(t3, " \tsource: BGP\n", ""), vip4.String(), gone.String())
	if renamed == t3 || noSource == t3 {
		t.Fatal("the transcript no longer has the lines this test changes")
	}
	other := netip.MustParsePrefix("10.255.0.12/32")
	srv := birdtest.NewServer(t, map[string]string{
		"show protocols all":                   fixture(t, "tiers/bird3.1.8-tiers-show-protocols-all.t3-unhealthy-other-site-announces.txt"),
		bird.GuardCommand(vip4, "rhi_guard4"):  renamed,
		bird.GuardCommand(gone, "rhi_guard4"):  noSource,
		bird.GuardCommand(other, "rhi_guard4"): t3,
	})
	a := Socket{Path: srv.Path, Timeout: 10 * time.Second}.Ask(context.Background(), []netip.Prefix{vip4, gone, other})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	for _, p := range []netip.Prefix{vip4, gone} {
		if got, ok := a.Origins[p]; ok {
			t.Errorf("%s: origins %v, want unknown", p, got)
		}
	}
	if a.Failed != 2 || !errors.Is(a.VIPErr, bird.ErrUnreadable) {
		t.Errorf("failed %d, first error %v; want 2 and bird.ErrUnreadable", a.Failed, a.VIPErr)
	}
	// t3 is a reply for 10.255.0.10/32: for another VIP it holds nothing
	// but it is read, so the round went on after the unreadable ones.
	if got, ok := a.Origins[other]; !ok || len(got) != 0 {
		t.Errorf("%s: origins %v (known %v), want none, known", other, got, ok)
	}
}
