package guardbird

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/bird"
	"github.com/rhi-daemon/rhi/bird/birdtest"
	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// The lab's site identities: each ADC's router id 10.99.n.2 as a number.
const (
	site1 uint32 = 10<<24 | 99<<16 | 1<<8 | 2 // dc1: the host the transcripts were taken on
	site2 uint32 = 10<<24 | 99<<16 | 2<<8 | 2 // dc2: full, serving
	site3 uint32 = 10<<24 | 99<<16 | 3<<8 | 2 // dc3: last resort
)

// versions are the BIRDs the transcripts of testdata/ come from.
var versions = []string{"bird2.0.12", "bird3.1.8"}

func transcript(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// labReplies are dc1's answers in a lab topology ("ebgp", "sameas",
// "ibgp") of one BIRD version: dc1 degraded, dc2 full, dc3 last resort.
func labReplies(t testing.TB, version, topology string) map[string]string {
	p := version + "-" + topology + "-"
	return map[string]string{
		protocolsCommand:                  transcript(t, p+"protocols-all.txt"),
		statusCommand:                     transcript(t, p+"status.txt"),
		DumpCommand(birdconf.GuardTable4): transcript(t, p+"guard4.txt"),
		DumpCommand(birdconf.GuardTable6): transcript(t, p+"guard6.txt"),
	}
}

// view reads one round from a fake BIRD answering replies.
func view(t *testing.T, replies map[string]string, self uint32, vips ...netip.Prefix) (View, []string) {
	t.Helper()
	srv := birdtest.NewServer(t, replies)
	now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	v := Viewer{Path: srv.Path, Timeout: 5 * time.Second, SiteID: self, Now: func() time.Time { return now }}.View(context.Background(), vips)
	if !v.At.Equal(now) {
		t.Errorf("At %v, want the clock's %v", v.At, now)
	}
	return v, srv.Commands()
}

// none is in no guard table. (vip4 and vip6, the lab's VIPs, are
// ask_test.go's.)
var none = netip.MustParsePrefix("10.255.0.99/32")

// TestViewLab: the real answers of BIRD 2 and BIRD 3 in the three-site lab
// (eBGP, sites in one AS, iBGP): dc2 serves, dc3 is in last resort and does
// not, dc1's own route does not count, a VIP the table lacks is served by
// nobody (known), and the round takes one dump per family plus "show
// protocols all" and "show status" (site_id unset).
func TestViewLab(t *testing.T) {
	for _, version := range versions {
		for _, top := range []string{"ebgp", "sameas", "ibgp"} {
			t.Run(version+"/"+top, func(t *testing.T) {
				v, cmds := view(t, labReplies(t, version, top), 0, vip4, vip6, none)
				if v.Err != nil {
					t.Fatal(v.Err)
				}
				if v.Self != site1 {
					t.Errorf("self %d, want dc1's router id %d", v.Self, site1)
				}
				for p, want := range map[netip.Prefix][]uint32{vip4: {site2}, vip6: {site2}, none: {}} {
					if got, ok := v.Sites(p); !ok || !slices.Equal(got, want) {
						t.Errorf("%s: serving %v (known %v), want %v; unknown: %v", p, got, ok, want, v.Unknown[p])
					}
				}
				want := []string{"restrict", protocolsCommand, statusCommand, DumpCommand(birdconf.GuardTable4), DumpCommand(birdconf.GuardTable6)}
				if !slices.Equal(cmds, want) {
					t.Errorf("commands %q, want %q", cmds, want)
				}
			})
		}
	}
}

// TestViewSiteIDConfigured: with site_id set, "show status" is not asked,
// and a path tagged with that id is this site's own (an echo), not another.
func TestViewSiteIDConfigured(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			v, cmds := view(t, labReplies(t, version, "sameas"), site2, vip4)
			if v.Err != nil {
				t.Fatal(v.Err)
			}
			if slices.Contains(cmds, statusCommand) {
				t.Errorf("asked %q with site_id set", statusCommand)
			}
			if got, ok := v.Sites(vip4); !ok || len(got) != 0 {
				t.Errorf("taking dc2's id as its own, %s: serving %v (known %v), want none: dc2's path is its own echo, dc3's is last resort", vip4, got, ok)
			}
		})
	}
}

// TestViewNoAddPath: the real "show protocols all" of an ADC whose router
// sends no ADD-PATH: the sessions are Established, so the view is unknown,
// never "nobody", with a reason naming the session.
func TestViewNoAddPath(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			replies := labReplies(t, version, "ebgp")
			replies[protocolsCommand] = transcript(t, version+"-noaddpath-protocols-all.txt")
			v, cmds := view(t, replies, 0, vip4, vip6)
			if v.Err == nil || !strings.Contains(v.Err.Error(), "peer_4 is Established without ADD-PATH receive") {
				t.Errorf("err %v, want the round unknown for peer_4 without ADD-PATH", v.Err)
			}
			for _, p := range []netip.Prefix{vip4, vip6} {
				if s, ok := v.Sites(p); ok {
					t.Errorf("%s known: %v", p, s)
				}
			}
			if slices.Contains(cmds, DumpCommand(birdconf.GuardTable4)) {
				t.Errorf("dumped a guard table that cannot be trusted: %q", cmds)
			}
		})
	}
}

// TestSessions reads eligibility from the real transcripts: the BGP
// sessions whose channels import into the guard tables, Established, with
// ADD-PATH receive negotiated, or not.
func TestSessions(t *testing.T) {
	for _, version := range versions {
		for name, addPath := range map[string]bool{"ebgp": true, "ibgp": true, "noaddpath": false} {
			t.Run(version+"/"+name, func(t *testing.T) {
				r := reply(t, transcript(t, version+"-"+name+"-protocols-all.txt"))
				tr, err := Sessions(r)
				if err != nil {
					t.Fatal(err)
				}
				want := []Session{
					{Name: "peer_4", Table: birdconf.GuardTable4, Family: "ipv4", Established: true, AddPathRX: addPath},
					{Name: "peer_6", Table: birdconf.GuardTable6, Family: "ipv6", Established: true, AddPathRX: addPath},
				}
				if !slices.Equal(tr.Sessions, want) {
					t.Errorf("sessions %+v, want %+v", tr.Sessions, want)
				}
			})
		}
	}
}

// reply frames a transcript as the connection would.
func reply(t testing.TB, text string) bird.Reply {
	t.Helper()
	srv := birdtest.NewServer(t, map[string]string{"x": text})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := bird.Dialer{MaxReplyLines: 1 << 22, MaxReplyBytes: 1 << 30}.Dial(ctx, srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Exec(ctx, "x")
	if err != nil {
		var be *bird.Error
		if !errors.As(err, &be) {
			t.Fatal(err)
		}
	}
	return r
}

// TestRouterSiteID reads both versions' "show status".
func TestRouterSiteID(t *testing.T) {
	for _, version := range versions {
		id, err := RouterSiteID(reply(t, transcript(t, version+"-ebgp-status.txt")))
		if err != nil || id != site1 {
			t.Errorf("%s: %d, %v; want %d", version, id, err, site1)
		}
	}
	if _, err := RouterSiteID(bird.Reply{Code: 13, Lines: []bird.Line{{Code: 13, Text: "Daemon is up and running"}}}); err == nil {
		t.Error("no router id line: want an error")
	}
}

// TestViewFindings: what the guard read wrong before it was rebuilt, each
// on a real BIRD 2 answer changed in one place, and what it must conclude.
func TestViewFindings(t *testing.T) {
	guard4 := transcript(t, "bird2.0.12-ebgp-guard4.txt")
	protos := transcript(t, "bird2.0.12-ebgp-protocols-all.txt")
	other := netip.MustParsePrefix("10.255.0.12/32")
	// dump4 is the dump with a second VIP, other, that dc2 serves, after
	// vip4's routes.
	dump4 := strings.Replace(guard4, "0000 \n", `1007-10.255.0.12/32       unicast [peer_4 06:53:11.407] * (100) [AS65002i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 65000 65002
 	BGP.next_hop: 10.99.1.1
 	BGP.local_pref: 100
 	BGP.large_community: (65002, 2, 174260738)
0000 
`, 1)
	mustChange := func(s, old, new string) string {
		t.Helper()
		out := strings.Replace(s, old, new, 1)
		if out == s {
			t.Fatalf("the transcript has no %q", old)
		}
		return out
	}
	// dc2's path of vip4 without its site identity; iBGP (empty AS path).
	untagged := mustChange(mustChange(dump4, "BGP.as_path: 65000 65002\n", "BGP.as_path: \n"), " \tBGP.large_community: (65002, 2, 174260738)\n", "")
	// two identities on one path
	twoTags := mustChange(dump4, "(65002, 2, 174260738)", "(65002, 2, 174260738) (65002, 2, 7)")
	// dc2's AS path as BIRD 2 prints a path too long for its buffer
	cut := mustChange(dump4, "BGP.as_path: 65000 65002\n", "BGP.as_path: 65000 "+strings.Repeat("65002 ", 70)+"650...\n")
	// a route of a protocol that is neither BGP nor this host's
	foreign := mustChange(dump4, "[rhi_degraded ", "[static1 ")
	// a route line whose net cannot be read
	garbled := mustChange(dump4, "1007-10.255.0.12/32 ", "1007-10.255.0.1x/32 ")
	// GRACEFUL_SHUTDOWN without the last-resort community still does not serve
	gshutOnly := mustChange(dump4, "(65003, 1, 2) (65003, 2, 174260994)", "(65003, 2, 174260994)")
	// the site's own path, echoed back (its id, another AS)
	echo := mustChange(dump4, "(65002, 2, 174260738)", "(65002, 2, 174260482)")
	// an unrelated session (a collector in master4) is Established, the
	// sessions that fill the guard tables are not
	collector := `1002-collector  BGP        ---        up     07:15:10.000  Established   
1006-  BGP state:          Established
    Neighbor address: 10.77.0.1
    Neighbor AS:      65077
    Local AS:         64999
  Channel ipv4
    State:          UP
    Table:          master4
 
`
	down := strings.ReplaceAll(protos, "Established", "Active")
	down = strings.Replace(down, "1002-peer_4", collector+"1002-peer_4", 1)
	withCollector := strings.Replace(protos, "1002-peer_4", collector+"1002-peer_4", 1)

	type want struct {
		serving map[netip.Prefix][]uint32 // known VIPs
		unknown map[netip.Prefix]string   // unknown VIPs: a part of the reason
		err     string                    // "" or a part of View.Err
	}
	for _, tc := range []struct {
		name   string
		protos string
		dump4  string
		want   want
	}{
		{"as captured", protos, dump4, want{serving: map[netip.Prefix][]uint32{vip4: {site2}, other: {site2}}}},
		{"a path without site identity (iBGP) is unknown, not nobody", protos, untagged,
			want{unknown: map[netip.Prefix]string{vip4: "carries no site identity"}, serving: map[netip.Prefix][]uint32{other: {site2}}}},
		{"a path with two identities is unknown", protos, twoTags,
			want{unknown: map[netip.Prefix]string{vip4: "2 site identities"}, serving: map[netip.Prefix][]uint32{other: {site2}}}},
		{"one unreadable net leaves the rest of the round known", protos, cut,
			want{unknown: map[netip.Prefix]string{vip4: "as path"}, serving: map[netip.Prefix][]uint32{other: {site2}}}},
		{"a route neither BGP nor own is unknown", protos, foreign,
			want{unknown: map[netip.Prefix]string{vip4: `protocol "static1"`}, serving: map[netip.Prefix][]uint32{other: {site2}}}},
		{"an unreadable net makes the VIPs it could be unknown", protos, garbled,
			want{unknown: map[netip.Prefix]string{other: "no net", none: "no net"}, serving: map[netip.Prefix][]uint32{vip4: {site2}}}},
		{"GRACEFUL_SHUTDOWN alone does not serve", protos, gshutOnly, want{serving: map[netip.Prefix][]uint32{vip4: {site2}, other: {site2}}}},
		{"the own path echoed back is not another site", protos, echo, want{serving: map[netip.Prefix][]uint32{vip4: {}, other: {site2}}}},
		{"an unrelated Established session does not make the guard table known", down, dump4,
			want{err: "no BGP session that imports into it is Established", unknown: map[netip.Prefix]string{vip4: "nothing fills it"}}},
		{"an unrelated session changes nothing", withCollector, dump4, want{serving: map[netip.Prefix][]uint32{vip4: {site2}, other: {site2}}}},
		{"a BIRD error on the dump", protos, "8001 Network not found\n", want{serving: map[netip.Prefix][]uint32{vip4: {}, other: {}}}},
		{"a syntax error on the dump", protos, "9001 syntax error\n", want{err: "9001", unknown: map[netip.Prefix]string{vip4: "9001"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := view(t, map[string]string{
				protocolsCommand:                  tc.protos,
				statusCommand:                     transcript(t, "bird2.0.12-ebgp-status.txt"),
				DumpCommand(birdconf.GuardTable4): tc.dump4,
			}, 0, vip4, other, none)
			if (v.Err != nil) != (tc.want.err != "") || (v.Err != nil && !strings.Contains(v.Err.Error(), tc.want.err)) {
				t.Errorf("err %v, want %q", v.Err, tc.want.err)
			}
			for p, w := range tc.want.serving {
				if got, ok := v.Sites(p); !ok || !slices.Equal(got, w) {
					t.Errorf("%s: serving %v (known %v, unknown %v), want %v", p, got, ok, v.Unknown[p], w)
				}
			}
			for p, w := range tc.want.unknown {
				if got, ok := v.Sites(p); ok || v.Unknown[p] == nil || !strings.Contains(v.Unknown[p].Error(), w) {
					t.Errorf("%s: serving %v (known %v), unknown %v; want unknown for %q", p, got, ok, v.Unknown[p], w)
				}
			}
		})
	}
}

// TestViewUnreachable: no BIRD at the path: the round is unknown.
func TestViewUnreachable(t *testing.T) {
	v := Viewer{Path: t.TempDir() + "/nobird.ctl", Timeout: time.Second}.View(context.Background(), []netip.Prefix{vip4})
	if v.Err == nil {
		t.Fatalf("got %+v, want an error", v)
	}
	if _, ok := v.Sites(vip4); ok {
		t.Error("a VIP is known without BIRD")
	}
}

// TestViewStalled: BIRD stops answering mid-round: the round ends at the
// exchange's own bound and the VIPs are unknown. Each exchange passes
// through birdtest.Deadlines, which checks it has a deadline of its own,
// at most Timeout away (not only the caller's hour), and ends the stalled
// one when the server stalls, as that deadline would: the test waits for
// no clock.
func TestViewStalled(t *testing.T) {
	replies := labReplies(t, "bird2.0.12", "ebgp")
	srv := birdtest.NewServer(t, replies)
	srv.Stall(DumpCommand(birdconf.GuardTable4))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	d := &birdtest.Deadlines{Timeout: time.Minute, Stalled: srv.Stalled()}
	vw := Viewer{Path: srv.Path, Timeout: time.Minute, watch: func(e Execer) Execer { return ownDeadlines{e, d} }}
	v := vw.View(ctx, []netip.Prefix{vip4, vip6})
	if v.Err == nil || ctx.Err() != nil {
		t.Fatalf("err %v (ctx %v): want the round unknown within the exchange's bound", v.Err, ctx.Err())
	}
	for _, p := range d.Problems {
		t.Error(p)
	}
	for _, p := range []netip.Prefix{vip4, vip6} {
		if _, ok := v.Sites(p); ok {
			t.Errorf("%s known after a stalled dump", p)
		}
	}
}

// ownDeadlines passes each exchange on to BIRD through Deadlines.
type ownDeadlines struct {
	e Execer
	d *birdtest.Deadlines
}

func (o ownDeadlines) Exec(ctx context.Context, cmd string) (bird.Reply, error) {
	ctx, cancel := o.d.Enter(ctx, cmd)
	defer cancel()
	return o.e.Exec(ctx, cmd)
}

// TestViewUnknownFormat: dc2's serving path of vip4, in the real dump of
// BIRD 2 and of BIRD 3, changed into a format the parser does not know: no
// source, no AS path, attributes in an unknown dialect, an AS path cut with
// "...". vip4 is unknown, never served by nobody, and the round goes on: a
// second VIP later in the dump is still known, and the round has no error.
func TestViewUnknownFormat(t *testing.T) {
	other := netip.MustParsePrefix("10.255.0.12/32")
	// The second VIP, served by dc2, as each BIRD prints it.
	tail := map[string]string{
		"bird2.0.12": `1007-10.255.0.12/32       unicast [peer_4 06:53:11.407] * (100) [AS65002i]
 	via 10.99.1.1 on peer
1008-	Type: BGP univ
1012-	BGP.origin: IGP
 	BGP.as_path: 65000 65002
 	BGP.next_hop: 10.99.1.1
 	BGP.local_pref: 100
 	BGP.large_community: (65002, 2, 174260738)
0000 
`,
		"bird3.1.8": `1007-10.255.0.12/32       unicast [peer_4 06:53:16.911] * (100) [AS65002i]
 	via 10.99.1.1 on peer
1012-	preference: 100
 	from: 10.99.1.1
 	source: BGP
 	bgp_origin: IGP
 	bgp_path: 65000 65002
 	bgp_next_hop: 10.99.1.1
 	bgp_local_pref: 100
 	bgp_large_community: (65002, 2, 174260738)
1008-	Internal route handling values: 6L 10G 0S id 1
0000 
`,
	}
	// Each change applies to dc2's path of vip4 only: the text from its
	// route line to dc3's.
	type change struct{ old, new string }
	cases := map[string]map[string][]change{
		"no source": {
			"bird2.0.12": {{"1008-\tType: BGP univ\n1012-", "1012-"}},
			"bird3.1.8":  {{" \tsource: BGP\n", ""}},
		},
		"no AS path": {
			"bird2.0.12": {{" \tBGP.as_path: 65000 65002\n", ""}},
			"bird3.1.8":  {{" \tbgp_path: 65000 65002\n", ""}},
		},
		"neither source nor AS path": {
			"bird2.0.12": {{"1008-\tType: BGP univ\n1012-", "1012-"}, {" \tBGP.as_path: 65000 65002\n", ""}},
			"bird3.1.8":  {{" \tsource: BGP\n", ""}, {" \tbgp_path: 65000 65002\n", ""}},
		},
		"attributes in an unknown dialect": {
			"bird2.0.12": {{"BGP.", "bgp::"}, {"BGP.", "bgp::"}, {"BGP.", "bgp::"}, {"BGP.", "bgp::"}, {"BGP.", "bgp::"}},
			"bird3.1.8":  {{"bgp_", "bgp::"}, {"bgp_", "bgp::"}, {"bgp_", "bgp::"}, {"bgp_", "bgp::"}, {"bgp_", "bgp::"}},
		},
		"an AS path cut with ...": {
			"bird2.0.12": {{"BGP.as_path: 65000 65002\n", "BGP.as_path: 65000 " + strings.Repeat("65002 ", 70) + "650...\n"}},
			"bird3.1.8":  {{"bgp_path: 65000 65002\n", "bgp_path: 65000 " + strings.Repeat("65002 ", 70) + "650...\n"}},
		},
	}
	for name, byVersion := range cases {
		for _, version := range versions {
			t.Run(name+"/"+version, func(t *testing.T) {
				replies := labReplies(t, version, "ebgp")
				dump := strings.Replace(replies[DumpCommand(birdconf.GuardTable4)], "0000 \n", tail[version], 1)
				i := strings.Index(dump, "[AS65002i]")
				j := strings.Index(dump, "[AS65003i]")
				if i < 0 || j < i {
					t.Fatal("the transcript has no dc2 path before dc3's")
				}
				block := dump[i:j]
				for _, c := range byVersion[version] {
					changed := strings.Replace(block, c.old, c.new, 1)
					if changed == block {
						t.Fatalf("dc2's path has no %q", c.old)
					}
					block = changed
				}
				replies[DumpCommand(birdconf.GuardTable4)] = dump[:i] + block + dump[j:]
				v, _ := view(t, replies, 0, vip4, other)
				if v.Err != nil {
					t.Fatalf("the round failed: %v; want only %s unknown", v.Err, vip4)
				}
				if got, ok := v.Sites(vip4); ok || v.Unknown[vip4] == nil {
					t.Errorf("%s: serving %v (known %v), unknown %v; want unknown", vip4, got, ok, v.Unknown[vip4])
				} else {
					t.Logf("%s: %v", vip4, v.Unknown[vip4])
				}
				if got, ok := v.Sites(other); !ok || !slices.Equal(got, []uint32{site2}) {
					t.Errorf("%s, after the unreadable net: serving %v (known %v, unknown %v), want dc2", other, got, ok, v.Unknown[other])
				}
			})
		}
	}
}
