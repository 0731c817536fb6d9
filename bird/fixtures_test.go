package bird

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readTranscript frames one captured reply exactly as Conn does and checks
// that the file holds exactly one reply.
func readTranscript(t testing.TB, name string) Reply {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	fr := newFrameReader(bytes.NewReader(data), DefaultMaxLineBytes, DefaultMaxReplyBytes)
	r, err := fr.readReply()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if _, err := fr.readReply(); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: bytes left after the first reply (err %v)", name, err)
	}
	return r
}

// execResult is what Exec would return for a reply read off the socket.
func execResult(r Reply) (Reply, error) {
	return r, replyError(r)
}

func protoSummary(p Protocol) string {
	var ch []string
	for _, c := range p.Channels {
		ch = append(ch, c.Name+":"+c.State+":"+c.Table)
	}
	return fmt.Sprintf("%s %s %s %s since=%q info=%q bgp=%q est=%v ch=%v",
		p.Name, p.Proto, p.Table, p.State, p.Since, p.Info, p.BGPState, p.Established(), ch)
}

func routeSummary(rt Route) string {
	star := ""
	if rt.Primary {
		star = " *"
	}
	s := fmt.Sprintf("%s %s %s [%s %s]%s (%d)", rt.Table, rt.Prefix, rt.Type, rt.Proto, rt.Since, star, rt.Preference)
	if rt.From != "" {
		s += " from=" + rt.From
	}
	if rt.Source != "" {
		s += " source=" + rt.Source
	}
	return s
}

// versions are the BIRD releases whose transcripts testdata holds, each
// file named "<version>-<command>.<situation>.txt": Debian 12's bird2,
// Debian 13's bird2 and Debian 13's bird3.
var versions = []string{bird2012, bird2176, bird318}

// Times in the summaries are replaced by "T" (BIRD's default "iso short
// ms", 14:07:33.693) or "D T" ("iso long", 2026-12-02 14:10:34): the
// versions were captured at other times, but a Since must still be one
// whole time, spaces and all.
var (
	longTime  = regexp.MustCompile(`\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b`)
	shortTime = regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d{3}\b`)
)

func timeless(s string) string {
	return shortTime.ReplaceAllString(longTime.ReplaceAllString(s, "D T"), "T")
}

// Checks a fixture case can make. They compare timeless summaries, and
// protocols sorted by name: BIRD 3 lists them in another order.
func wantProtocols(all bool, want ...string) func(*testing.T, Reply) {
	return func(t *testing.T, r Reply) {
		parse := ParseProtocols
		if all {
			parse = ParseProtocolsAll
		}
		ps, err := parse(r)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, timeless(protoSummary(p)))
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("protocols (-want +got):\n%s", diff)
		}
	}
}

func wantRoutes(want ...string) func(*testing.T, Reply) {
	return func(t *testing.T, r Reply) {
		rs, err := ParseRoutes(r)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rt := range rs {
			got = append(got, timeless(routeSummary(rt)))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("routes (-want +got):\n%s", diff)
		}
	}
}

func wantNotRoutes(t *testing.T, r Reply) {
	if rs, err := ParseRoutes(r); err == nil {
		t.Errorf("ParseRoutes = %v, want an error for a reply that is no route listing", rs)
	}
}

func wantExport(want ExportState) func(*testing.T, Reply) {
	return func(t *testing.T, r Reply) {
		got, err := ParseExport(execResult(r))
		if err != nil || got != want {
			t.Errorf("ParseExport = %v, %v; want %v, nil", got, err, want)
		}
	}
}

// both runs two checks.
func both(a, b func(*testing.T, Reply)) func(*testing.T, Reply) {
	return func(t *testing.T, r Reply) { a(t, r); b(t, r) }
}

// wantErrCode checks that the reply is a BIRD error with that code, and that
// no parser reads it as a state: an error is never "withdrawn".
func wantErrCode(code int, text string) func(*testing.T, Reply) {
	return func(t *testing.T, r Reply) {
		_, err := execResult(r)
		var be *Error
		if !errors.As(err, &be) || be.Code != code || be.Text != text {
			t.Fatalf("error = %v, want *Error %04d %q", err, code, text)
		}
		if st, err := ParseExport(execResult(r)); code != CodeNetworkNotFound && (err == nil || st != ExportUnknown) {
			t.Errorf("ParseExport = %v, %v; want ExportUnknown and an error", st, err)
		}
		if ps, err := ParseProtocolsAll(r); err == nil {
			t.Errorf("ParseProtocolsAll = %v, want an error", ps)
		}
	}
}

// fixture is one command in one situation, checked on every version that
// has its transcript.
type fixture struct {
	name  string                  // file name without "<version>-" and ".txt"
	code  int                     // end code
	check func(*testing.T, Reply) // nil: framing only
	// only lists the versions that have the transcript; nil: every one.
	only []string
	// differ replaces check for a version whose reply differs in what
	// the parsers must read (an error text, a listing); a difference in
	// the situation captured (a session still Active) says so.
	differ map[string]func(*testing.T, Reply)
}

const (
	bird2012 = "bird2.0.12"
	bird2176 = "bird2.17.6"
	bird318  = "bird3.1.8"
)

func fixtureCases() []fixture {
	const (
		device   = `device1 Device --- up since="T" info="" bgp="" est=false ch=[]`
		direct   = `rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[]`
		static   = `lab_static Static master4 up since="T" info="" bgp="" est=false ch=[]`
		peerBUp  = `peer_b BGP --- up since="T" info="Established" bgp="" est=true ch=[]`
		peerB6Up = `peer_b6 BGP --- up since="T" info="Established" bgp="" est=true ch=[]`
		refused  = `Active        Socket: Connection refused`
		shutdown = `Active        Received: Administrative shutdown`
		vipRoute = `master4 10.255.0.10/32 unicast [rhi_direct T] * (240)`
		vip6     = `master6 fd00:255::10/128 unicast [rhi_direct T] * (240)`
		agg      = `master4 10.255.0.0/24 blackhole [lab_static T] * (200)`
		// The plain protocol form of "show route export" while the
		// session is down.
		noTables2 = "No valid tables"
		noTables3 = "Requested 'show route export' to protocols which aren't accepting exports at all."
	)
	// notAccepting is that 9001 in each version's words.
	notAccepting := func(name string, only ...string) fixture {
		return fixture{name: name, code: 9001, check: wantErrCode(9001, noTables2), only: only,
			differ: map[string]func(*testing.T, Reply){bird318: wantErrCode(9001, noTables3)}}
	}
	b3only := versions[1:] // captured with Debian 13 only
	allUp := func(peerB6 string) []string {
		return []string{device, direct, peerBUp, peerB6, static}
	}
	return []fixture{
		{name: "configure", code: 3},
		{name: "configure.isolong", code: 3, only: b3only},
		{name: "disable-peer_b-again", code: 0},
		{name: "disable-peer_b", code: 0},
		{name: "disable-rhi_direct", code: 0, only: b3only},
		{name: "enable-peer_b", code: 0},
		{name: "error-show-protocols-all-unknown", code: 9001,
			check: wantErrCode(9001, "syntax error, unexpected CF_SYM_UNDEFINED, expecting END or CF_SYM_KNOWN or TEXT")},
		{name: "error-show-protocols-pattern-nomatch", code: 8003, check: wantErrCode(8003, "No protocols match")},
		{name: "error-show-route-export-not-a-protocol", code: 9001, check: wantErrCode(9001, "Protocol name required")},
		{name: "error-show-route-export-unknown", code: 9001,
			check: wantErrCode(9001, "syntax error, unexpected CF_SYM_UNDEFINED, expecting CF_SYM_KNOWN or TABLE")},
		{name: "error-syntax", code: 9001, check: wantErrCode(9001, "syntax error, unexpected CF_SYM_UNDEFINED")},
		{name: "greeting", code: CodeWelcome},
		{name: "peer-show-route-protocol-peer_a.up-novip", code: 0, check: wantRoutes()},
		{name: "peer-show-route-protocol-peer_a.up-vip", code: 0,
			check: wantRoutes(`master4 10.255.0.10/32 unicast [peer_a T] * (100)`)},
		{name: "peer-show-route-vip-all.up-novip", code: 8001, check: wantRoutes()},
		{name: "peer-show-route-vip-all.up-vip", code: 0,
			check: wantRoutes(`master4 10.255.0.10/32 unicast [peer_a T] * (100) source=BGP`)},
		{name: "restrict-disable-denied", code: CodeAccessDenied, check: wantErrCode(8007, "Access denied")},
		{name: "restrict-show-protocols", code: 0, check: wantProtocols(false, allUp(peerB6Up)...)},
		{name: "restrict", code: CodeRestricted},
		// connect-vip: peer_b enabled again while the peer is stopped and
		// its address removed. BIRD 2.0.12 was caught in Connect, the
		// others in Active (waiting to retry).
		{name: "show-protocols-all-peer_b.connect-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- start since="T" info="Connect" bgp="Connect" est=false ch=[ipv4:DOWN:master4]`),
			differ: map[string]func(*testing.T, Reply){
				bird2176: wantProtocols(true, `peer_b BGP --- start since="T" info="Active" bgp="Active" est=false ch=[ipv4:DOWN:master4]`),
				bird318:  wantProtocols(true, `peer_b BGP --- start since="T" info="Active" bgp="Active" est=false ch=[ipv4:DOWN:master4]`),
			}},
		{name: "show-protocols-all-peer_b.disabled-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- down since="T" info="" bgp="Down" est=false ch=[ipv4:DOWN:master4]`)},
		{name: "show-protocols-all-peer_b.exptable-peerdown-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv4:DOWN:master4]`)},
		{name: "show-protocols-all-peer_b.isolong.up-vip", code: 0, only: b3only, check: wantProtocols(true,
			`peer_b BGP --- up since="D T" info="Established" bgp="Established" est=true ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all-peer_b.linkdown-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- start since="T" info="Idle          Error: Neighbor lost" bgp="Idle" est=false ch=[ipv4:DOWN:master4]`)},
		// peerdown-vip: the peer stopped with SIGTERM. BIRD 2.0.12 was
		// caught after its reconnect was refused, the others while the
		// peer's notice was the last word.
		{name: "show-protocols-all-peer_b.peerdown-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- start since="T" info="`+refused+`" bgp="Active" est=false ch=[ipv4:DOWN:master4]`),
			differ: map[string]func(*testing.T, Reply){
				bird2176: wantProtocols(true, `peer_b BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv4:DOWN:master4]`),
				bird318:  wantProtocols(true, `peer_b BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv4:DOWN:master4]`),
			}},
		{name: "show-protocols-all-peer_b.up-novip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all-peer_b.up-vip", code: 0, check: wantProtocols(true,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all-rhi_direct.up-vip", code: 0, check: wantProtocols(true,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4 ipv6:UP:master6]`)},
		{name: "show-protocols-pattern.up-vip", code: 0, check: wantProtocols(false, peerBUp, peerB6Up)},
		{name: "show-protocols.connect-vip", code: 0, check: wantProtocols(false, device, direct,
			`peer_b BGP --- start since="T" info="Connect" bgp="" est=false ch=[]`,
			`peer_b6 BGP --- start since="T" info="`+refused+`" bgp="" est=false ch=[]`, static),
			differ: map[string]func(*testing.T, Reply){
				bird2176: wantProtocols(false, device, direct,
					`peer_b BGP --- start since="T" info="Active" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`, static),
				bird318: wantProtocols(false, device, direct,
					`peer_b BGP --- start since="T" info="Active" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+refused+`" bgp="" est=false ch=[]`, static),
			}},
		{name: "show-protocols.disabled-vip", code: 0, check: wantProtocols(false, device, direct,
			`peer_b BGP --- down since="T" info="" bgp="" est=false ch=[]`,
			`peer_b6 BGP --- start since="T" info="`+refused+`" bgp="" est=false ch=[]`, static),
			differ: map[string]func(*testing.T, Reply){
				bird2176: wantProtocols(false, device, direct,
					`peer_b BGP --- down since="T" info="" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`, static),
				bird318: wantProtocols(false, device, direct,
					`peer_b BGP --- down since="T" info="" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`, static),
			}},
		{name: "show-protocols.isolong.up-vip", code: 0, check: wantProtocols(false,
			`device1 Device --- up since="D T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="D T" info="" bgp="" est=false ch=[]`,
			`peer_b BGP --- up since="D T" info="Established" bgp="" est=true ch=[]`,
			`peer_b6 BGP --- up since="D T" info="Established" bgp="" est=true ch=[]`,
			`lab_static Static master4 up since="D T" info="" bgp="" est=false ch=[]`)},
		{name: "show-protocols.linkdown-vip", code: 0, check: wantProtocols(false, device, direct,
			`peer_b BGP --- start since="T" info="Idle          Error: Neighbor lost" bgp="" est=false ch=[]`,
			`peer_b6 BGP --- start since="T" info="Idle          Error: Neighbor lost" bgp="" est=false ch=[]`,
			static)},
		{name: "show-protocols.peerdown-vip", code: 0, check: wantProtocols(false, device, direct,
			`peer_b BGP --- start since="T" info="`+refused+`" bgp="" est=false ch=[]`,
			`peer_b6 BGP --- start since="T" info="`+refused+`" bgp="" est=false ch=[]`, static),
			differ: map[string]func(*testing.T, Reply){
				bird2176: wantProtocols(false, device, direct,
					`peer_b BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`, static),
				bird318: wantProtocols(false, device, direct,
					`peer_b BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`,
					`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="" est=false ch=[]`, static),
			}},
		{name: "show-protocols.up-novip", code: 0, check: wantProtocols(false, allUp(peerB6Up)...)},
		{name: "show-protocols.up-vip", code: 0, check: wantProtocols(false, allUp(peerB6Up)...)},
		{name: "show-route-all.up-vip", code: 0, check: wantRoutes(
			agg+` source=static`, vipRoute+` source=device`, vip6+` source=device`)},
		{name: "show-route-count.disabled-vip", code: 14, check: wantNotRoutes, only: b3only},
		{name: "show-route-count.peerdown-vip", code: 14, check: wantNotRoutes},
		{name: "show-route-count.up-novip", code: 14, check: wantNotRoutes},
		{name: "show-route-count.up-vip", code: 14, check: wantNotRoutes},
		// The aggregate is in master4 but fails peer_b's export filter.
		notAccepting("show-route-export-peer_b-aggregate.disabled-vip", b3only...),
		notAccepting("show-route-export-peer_b-aggregate.peerdown-vip"),
		{name: "show-route-export-peer_b-aggregate.up-novip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-export-peer_b-aggregate.up-vip", code: 0, check: wantExport(NotExported)},
		notAccepting("show-route-export-peer_b-count.disabled-vip", b3only...),
		notAccepting("show-route-export-peer_b-count.peerdown-vip"),
		{name: "show-route-export-peer_b-count.up-novip", code: 0, check: wantNotRoutes},
		{name: "show-route-export-peer_b-count.up-vip", code: 0, check: wantNotRoutes},
		{name: "show-route-export-peer_b-table-master4-vip.disabled-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-export-peer_b-table-master4-vip.peerdown-vip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-export-peer_b-table-master4-vip.up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-export-peer_b-table-master4-vip.up-vip", code: 0, check: wantExport(Exported), only: b3only},
		notAccepting("show-route-export-peer_b-vip-all.disabled-vip", b3only...),
		notAccepting("show-route-export-peer_b-vip-all.peerdown-vip"),
		{name: "show-route-export-peer_b-vip-all.up-novip", code: 8001, check: wantExport(NotInTable)},
		{name: "show-route-export-peer_b-vip-all.up-vip", code: 0, check: wantExport(Exported)},
		// The plain protocol form: 9001 while the session is down.
		notAccepting("show-route-export-peer_b-vip.disabled-vip"),
		{name: "show-route-export-peer_b-vip.isolong.up-vip", code: 0,
			check: wantRoutes(`master4 10.255.0.10/32 unicast [rhi_direct D T] * (240)`)},
		notAccepting("show-route-export-peer_b-vip.peerdown-vip"),
		{name: "show-route-export-peer_b-vip.recovered", code: 0, check: wantExport(Exported)},
		{name: "show-route-export-peer_b-vip.up-novip", code: 8001, check: wantExport(NotInTable)},
		{name: "show-route-export-peer_b-vip.up-vip", code: 0, check: wantExport(Exported)},
		// The channel form (what ExportCommand and ExportAllCommand send):
		// not exported while down.
		{name: "show-route-export-peer_b.ipv4-vip-all.disabled-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-export-peer_b.ipv4-vip-all.peerdown-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-export-peer_b.ipv4-vip-all.up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-export-peer_b.ipv4-vip-all.up-vip", code: 0, only: b3only,
			check: both(wantExport(Exported), wantRoutes(vipRoute+" source=device"))},
		{name: "show-route-export-peer_b.ipv4-vip.disabled-vip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-export-peer_b.ipv4-vip.peerdown-vip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-export-peer_b.ipv4-vip.up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-export-peer_b.ipv4-vip.up-vip", code: 0, check: both(wantExport(Exported), wantRoutes(vipRoute)), only: b3only},
		notAccepting("show-route-export-peer_b6-vip6.disabled-vip", b3only...),
		notAccepting("show-route-export-peer_b6-vip6.peerdown-vip"),
		{name: "show-route-export-peer_b6-vip6.up-novip", code: 8001, check: wantExport(NotInTable)},
		{name: "show-route-export-peer_b6-vip6.up-vip", code: 0, check: wantExport(Exported)},
		{name: "show-route-export-peer_b6.ipv6-vip6.disabled-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-export-peer_b6.ipv6-vip6.peerdown-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-export-peer_b6.ipv6-vip6.up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-export-peer_b6.ipv6-vip6.up-vip", code: 0, check: both(wantExport(Exported), wantRoutes(vip6)), only: b3only},
		{name: "show-route-export-table-peer_b.ipv4-vip.exptable-peerdown-vip", code: 9001,
			check: wantErrCode(9001, "No export table in channel peer_b.ipv4")},
		{name: "show-route-export-table-peer_b.ipv4-vip.exptable-up-novip", code: 8001, check: wantExport(NotInTable)},
		// BIRD 3's export table prints no destination type and preference 0.
		{name: "show-route-export-table-peer_b.ipv4-vip.exptable-up-vip", code: 0,
			check:  wantRoutes(`export 10.255.0.10/32 unicast [rhi_direct T] * (240)`),
			differ: map[string]func(*testing.T, Reply){bird318: wantRoutes(`export 10.255.0.10/32  [rhi_direct T] * (0)`)}},
		{name: "show-route-export-table-peer_b.ipv4.exptable-up-novip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-export-table-peer_b.ipv4.exptable-up-vip", code: 0, only: b3only, check: wantExport(Exported),
			differ: map[string]func(*testing.T, Reply){bird318: wantRoutes(`export 10.255.0.10/32  [rhi_direct T] * (0)`)}},
		notAccepting("show-route-exported-peer_b-vip.disabled-vip", b3only...),
		notAccepting("show-route-exported-peer_b-vip.peerdown-vip"),
		{name: "show-route-exported-peer_b-vip.up-novip", code: 8001, check: wantExport(NotInTable)},
		{name: "show-route-exported-peer_b-vip.up-vip", code: 0, check: wantExport(Exported)},
		{name: "show-route-exported-peer_b.ipv4-vip.disabled-vip", code: 0, check: wantExport(NotExported), only: b3only},
		{name: "show-route-exported-peer_b.ipv4-vip.peerdown-vip", code: 0, check: wantExport(NotExported)},
		{name: "show-route-exported-peer_b.ipv4-vip.up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-exported-peer_b.ipv4-vip.up-vip", code: 0, check: wantExport(Exported), only: b3only},
		// "show route for" is a longest match in BIRD 2 (the covering /24
		// answers for a VIP that is gone) and lists every covering net in
		// BIRD 3: never a test of the VIP's presence.
		{name: "show-route-for-vip.disabled-vip", code: 0, check: wantRoutes(vipRoute), only: b3only,
			differ: map[string]func(*testing.T, Reply){bird318: wantRoutes(agg, vipRoute)}},
		{name: "show-route-for-vip.peerdown-vip", code: 0, check: wantRoutes(vipRoute),
			differ: map[string]func(*testing.T, Reply){bird318: wantRoutes(agg, vipRoute)}},
		{name: "show-route-for-vip.up-novip", code: 0, check: wantRoutes(agg)},
		{name: "show-route-for-vip.up-vip", code: 0, check: wantRoutes(vipRoute),
			differ: map[string]func(*testing.T, Reply){bird318: wantRoutes(agg, vipRoute)}},
		{name: "show-route-for-vip6.disabled-vip", code: 0, check: wantRoutes(vip6), only: b3only},
		{name: "show-route-for-vip6.peerdown-vip", code: 0, check: wantRoutes(vip6)},
		{name: "show-route-for-vip6.up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-for-vip6.up-vip", code: 0, check: wantRoutes(vip6)},
		notAccepting("show-route-noexport-peer_b-vip.disabled-vip", b3only...),
		notAccepting("show-route-noexport-peer_b-vip.peerdown-vip"),
		{name: "show-route-noexport-peer_b-vip.up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-noexport-peer_b-vip.up-vip", code: 0, check: wantRoutes()},
		{name: "show-route-protocol-rhi_direct.up-vip", code: 0, check: wantRoutes(vipRoute, vip6)},
		{name: "show-route-vip-all.disabled-vip", code: 0, check: wantRoutes(vipRoute + " source=device"), only: b3only},
		{name: "show-route-vip-all.peerdown-vip", code: 0, check: wantRoutes(vipRoute + " source=device")},
		{name: "show-route-vip-all.up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip-all.up-vip", code: 0, check: wantRoutes(vipRoute + " source=device")},
		// "where net =" scans the whole table and never says 8001.
		{name: "show-route-where-net-vip.disabled-vip", code: 0, check: wantRoutes(vipRoute), only: b3only},
		{name: "show-route-where-net-vip.peerdown-vip", code: 0, check: wantRoutes(vipRoute)},
		{name: "show-route-where-net-vip.up-novip", code: 0, check: wantRoutes()},
		{name: "show-route-where-net-vip.up-vip", code: 0, check: wantRoutes(vipRoute)},
		{name: "show-status", code: 13},
		// A whole "show protocols all" (the others above are one protocol each).
		{name: "show-protocols-all.up-vip", code: 0, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4 ipv6:UP:master6]`,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:master4]`,
			`peer_b6 BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv6:UP:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all.up-novip", code: 0, only: b3only, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4 ipv6:UP:master6]`,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:master4]`,
			`peer_b6 BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv6:UP:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all.peerdown-vip", code: 0, only: b3only, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4 ipv6:UP:master6]`,
			`peer_b BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv4:DOWN:master4]`,
			`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv6:DOWN:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all.disabled-vip", code: 0, only: b3only, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4 ipv6:UP:master6]`,
			`peer_b BGP --- down since="T" info="" bgp="Down" est=false ch=[ipv4:DOWN:master4]`,
			`peer_b6 BGP --- start since="T" info="`+shutdown+`" bgp="Active" est=false ch=[ipv6:DOWN:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		// "show route <net> table <t> all", what the check asks per table
		// of a direct protocol's channel: the table's header, then the route.
		{name: "show-route-vip-table-master4-all.disabled-vip", code: 0, only: b3only, check: wantRoutes(vipRoute + " source=device")},
		{name: "show-route-vip-table-master4-all.up-vip", code: 0, check: wantRoutes(vipRoute + " source=device")},
		{name: "show-route-vip-table-master4-all.up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip-table-master4-all.peerdown-vip", code: 0, check: wantRoutes(vipRoute + " source=device")},
		{name: "show-route-vip6-table-master6-all.disabled-vip", code: 0, only: b3only, check: wantRoutes(vip6 + " source=device")},
		{name: "show-route-vip6-table-master6-all.up-vip", code: 0, check: wantRoutes(vip6 + " source=device")},
		{name: "show-route-vip6-table-master6-all.up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip6-table-master6-all.peerdown-vip", code: 0, check: wantRoutes(vip6 + " source=device")},
		{name: "show-route-aggregate-table-master4-all.up-vip", code: 0, check: wantRoutes(agg + " source=static")},
		// A table of the other family, a table that does not exist: errors.
		{name: "error-show-route-vip-table-master6", code: 9001,
			check: wantErrCode(9001, "Incompatible type of prefix/ip for table master6")},
		{name: "error-show-route-vip-table-nosuch", code: 9001,
			check: wantErrCode(9001, "syntax error, unexpected CF_SYM_UNDEFINED, expecting CF_SYM_KNOWN or ALL")},
		// viptable: rhi_direct imports IPv4 into table vip4, and peer_b
		// exports from it. The default tables do not have the VIP.
		{name: "show-protocols-all.viptable-up-vip", code: 0, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:vip4 ipv6:UP:master6]`,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:vip4]`,
			`peer_b6 BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv6:UP:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-protocols-all.viptable-up-novip", code: 0, only: b3only, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- up since="T" info="" bgp="" est=false ch=[ipv4:UP:vip4 ipv6:UP:master6]`,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:vip4]`,
			`peer_b6 BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv6:UP:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-route-vip-all.viptable-up-vip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip-all.viptable-up-novip", code: 8001, check: wantRoutes(), only: b3only},
		{name: "show-route-vip-all.viptable-directdown-vip", code: 8001, check: wantRoutes(), only: b3only},
		{name: "show-route-vip-table-vip4-all.viptable-up-vip", code: 0,
			check: wantRoutes(`vip4 10.255.0.10/32 unicast [rhi_direct T] * (240) source=device`)},
		{name: "show-route-export-peer_b.ipv4-vip.viptable-up-vip", code: 0, check: wantExport(Exported)},
		{name: "show-route-export-peer_b.ipv4-vip.viptable-up-novip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-export-peer_b.ipv4-vip.viptable-directdown-vip", code: 8001, check: wantExport(NotInTable), only: b3only},
		{name: "show-route-vip6-table-master6-all.viptable-up-vip", code: 0, check: wantRoutes(vip6 + " source=device")},
		{name: "show-route-vip-table-vip4-all.viptable-up-novip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip6-table-master6-all.viptable-up-novip", code: 8001, check: wantRoutes()},
		// viptable, "disable rhi_direct": its channels are DOWN, the table empty.
		{name: "show-protocols-all.viptable-directdown-vip", code: 0, check: wantProtocols(true,
			`device1 Device --- up since="T" info="" bgp="" est=false ch=[]`,
			`rhi_direct Direct --- down since="T" info="" bgp="" est=false ch=[ipv4:DOWN:vip4 ipv6:DOWN:master6]`,
			`peer_b BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv4:UP:vip4]`,
			`peer_b6 BGP --- up since="T" info="Established" bgp="Established" est=true ch=[ipv6:UP:master6]`,
			`lab_static Static master4 up since="T" info="" bgp="" est=false ch=[ipv4:UP:master4]`)},
		{name: "show-route-vip-table-vip4-all.viptable-directdown-vip", code: 8001, check: wantRoutes()},
		{name: "show-route-vip6-table-master6-all.viptable-directdown-vip", code: 8001, check: wantRoutes(), only: b3only},
		// BGP attributes on a static route (BIRD 3 names them bgp_path, …).
		{name: "show-route-attrs-all", code: 0, only: b3only,
			check: wantRoutes(`master4 10.254.0.0/24 blackhole [s1 T] * (200) source=static`)},
		// An end code that is neither 0000 nor an error.
		{name: "show-symbols-peer_b", code: 1010},
	}
}

// TestFixtures reads every transcript of every version: the framing, the
// end code, and what the parsers make of it, which is the same for every
// version unless the case says why not.
func TestFixtures(t *testing.T) {
	covered := map[string]bool{} // TestPipelinedTranscript reads the socat captures
	for _, v := range versions {
		covered[v+"-socat-pipelined-session.up-vip.txt"] = true
	}
	for _, tc := range fixtureCases() {
		vs := tc.only
		if vs == nil {
			vs = versions
		}
		for _, v := range vs {
			file := v + "-" + tc.name + ".txt"
			covered[file] = true
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				r := readTranscript(t, file)
				if r.Code != tc.code {
					t.Fatalf("end code %04d, want %04d", r.Code, tc.code)
				}
				check := tc.check
				if c, ok := tc.differ[v]; ok {
					check = c
				}
				if check != nil {
					check(t, r)
				}
			})
		}
	}
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("transcript %s has no case in TestFixtures", f)
		}
	}
}

// The socat captures are a whole stream: greeting, then the replies to two
// commands written at once.
func TestPipelinedTranscript(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + v + "-socat-pipelined-session.up-vip.txt")
			if err != nil {
				t.Fatal(err)
			}
			fr := newFrameReader(bytes.NewReader(data), DefaultMaxLineBytes, DefaultMaxReplyBytes)
			var codes []string
			for {
				r, err := fr.readReply()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, fmt.Sprintf("%04d/%d", r.Code, len(r.Lines)))
			}
			if diff := cmp.Diff([]string{"0001/1", "0000/7", "0000/4"}, codes); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
		})
	}
}

func readFile(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Aliases that keep the tables short.
var (
	errEOF           = io.EOF
	errUnexpectedEOF = io.ErrUnexpectedEOF
)

// TestOtherRepliesAreNoListing feeds ParseRoutes and ParseExport real replies
// to other commands that end with 0000 like a listing does. None of them may
// read as an empty listing: ParseExport would call that "not exported",
// which reads as withdrawn.
func TestOtherRepliesAreNoListing(t *testing.T) {
	for _, v := range versions {
		files, err := filepath.Glob("testdata/" + v + "-show-protocols*.txt")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"restrict-show-protocols", "disable-peer_b", "disable-peer_b-again", "enable-peer_b"} {
			files = append(files, "testdata/"+v+"-"+name+".txt")
		}
		if len(files) < 10 {
			t.Fatalf("%s: only %d transcripts: %v", v, len(files), files)
		}
		for _, f := range files {
			name := filepath.Base(f)
			t.Run(strings.TrimSuffix(name, ".txt"), func(t *testing.T) {
				r := readTranscript(t, name)
				if r.Code != CodeOK {
					t.Fatalf("end code %04d; this test is about replies that end like a listing", r.Code)
				}
				if rs, err := ParseRoutes(r); err == nil {
					t.Errorf("ParseRoutes = %v, nil; want an error", rs)
				}
				if st, err := ParseExport(execResult(r)); err == nil || st != ExportUnknown {
					t.Errorf("ParseExport = %v, %v; want ExportUnknown and an error", st, err)
				}
			})
		}
	}
}
