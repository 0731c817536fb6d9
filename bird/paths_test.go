package bird

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tiers transcripts were captured by integration/tiers (TestGuardTable
// with RHI_TIERS_CAPTURE set) from BIRD 2.0.12 running deploy/bird/tiers.conf:
// dc1 (AS 65001), dc2 (65002) announcing 10.255.0.10/32 from rhi0, dc3
// (65003) announcing it from rhi1 (degraded, prepend 3), the router AS 65000
// sending every path (ADD-PATH).
const tiersDir = "tiers"

var (
	tiersVIP4 = netip.MustParsePrefix("10.255.0.10/32")
	tiersVIP6 = netip.MustParsePrefix("fd00:255::10/128")
)

// pathSummary is one path as the tests compare it.
func pathSummary(p Path) string {
	p.Since = "T" // the transcripts' times are of no interest here
	s := routeSummary(p.Route)
	if p.ASPath != nil || p.ASSet {
		s += fmt.Sprintf(" path=%v set=%v", p.ASPath, p.ASSet)
	}
	if p.Communities != nil {
		s += fmt.Sprintf(" c=%v", p.Communities)
	}
	if p.LargeCommunities != nil {
		s += fmt.Sprintf(" lc=%v", p.LargeCommunities)
	}
	return s
}

func TestParsePathsTranscripts(t *testing.T) {
	const (
		dc1 = "master4 10.255.0.10/32 unicast [dc1_4 T] * (100) source=BGP univ path=[65001] set=false"
		dc2 = "master4 10.255.0.10/32 unicast [dc2_4 T] (100) source=BGP univ path=[65002] set=false"
		dc3 = "master4 10.255.0.10/32 unicast [dc3_4 T] (100) source=BGP univ path=[65003 65003 65003 65003] set=false lc=[[65003 1 1]]"
	)
	tests := []struct {
		file string
		want []string
	}{
		{"bird2.0.12-tiers-peer-show-route-vip-all.three-sites.txt", []string{dc1, dc2, dc3}},
		{"bird2.0.12-tiers-peer-show-route-vip-all.two-sites.txt", []string{
			strings.Replace(dc2, "]", "] *", 1), dc3}},
		// What "show route export <channel> <prefix> all" shows is the route
		// as the export filter leaves it: the filter's prepends, not yet the
		// copy every eBGP export adds.
		{"bird2.0.12-tiers-show-route-export-peer_4-vip-all.degraded.txt", []string{
			"rhi_guard4 10.255.0.10/32 unicast [rhi_degraded T] * (245) source=device univ path=[65003 65003 65003] set=false lc=[[65003 1 1]]"}},
		{"bird2.0.12-tiers-show-route-export-peer_6-vip6-all.degraded.txt", []string{
			"rhi_guard6 fd00:255::10/128 unicast [rhi_degraded T] * (245) source=device univ path=[65003 65003 65003] set=false lc=[[65003 1 1]]"}},
		{"bird2.0.12-tiers-show-route-export-peer_4-vip-all.announced.txt", []string{
			"rhi_guard4 10.255.0.10/32 unicast [rhi_direct T] * (240) source=device univ"}},
		{"bird2.0.12-tiers-show-route-vip-table-master4-all.degraded.txt", []string{
			"master4 10.255.0.10/32 unicast [rhi_degraded T] * (245) source=device univ"}},
		{"bird2.0.12-tiers-show-route-table-master4-all.two-sites.txt", nil},
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.none.txt", nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			paths, err := ParsePaths(readTranscript(t, filepath.Join(tiersDir, tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range paths {
				got = append(got, pathSummary(p))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExportedDegradedAttributes is what rhi verify will check: a degraded
// VIP's exported route carries the host's AS RHI_DEGRADED_PREPEND times and
// the community (AS, 1, 1); an announced one carries neither.
func TestExportedDegradedAttributes(t *testing.T) {
	const as = 65003
	read := func(file string) Path {
		t.Helper()
		paths, err := ParsePaths(readTranscript(t, filepath.Join(tiersDir, file)))
		if err != nil || len(paths) != 1 {
			t.Fatalf("%s: %d paths, %v", file, len(paths), err)
		}
		return paths[0]
	}
	for _, file := range []string{
		"bird2.0.12-tiers-show-route-export-peer_4-vip-all.degraded.txt",
		"bird2.0.12-tiers-show-route-export-peer_6-vip6-all.degraded.txt",
	} {
		p := read(file)
		if n := p.LeadingCopies(as); n != 3 {
			t.Errorf("%s: %d leading copies of %d, want 3", file, n, as)
		}
		if !slices.Contains(p.LargeCommunities, LargeCommunity{as, 1, 1}) {
			t.Errorf("%s: no (%d, 1, 1) in %v", file, as, p.LargeCommunities)
		}
	}
	p := read("bird2.0.12-tiers-show-route-export-peer_4-vip-all.announced.txt")
	if p.LeadingCopies(as) != 0 || len(p.LargeCommunities) != 0 {
		t.Errorf("announced: path %v, large communities %v: want none", p.ASPath, p.LargeCommunities)
	}
}

func TestParseAnnouncers(t *testing.T) {
	tests := []struct {
		file   string
		prefix netip.Prefix
		table  string
		want   Announcers
	}{
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.none.txt", tiersVIP4, "rhi_guard4", Announcers{}},
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-only.txt", tiersVIP4, "rhi_guard4", Announcers{}},
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-and-one-site.txt", tiersVIP4, "rhi_guard4",
			Announcers{Paths: 1, Origins: []uint32{65003}}},
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.own-and-two-sites.txt", tiersVIP4, "rhi_guard4",
			Announcers{Paths: 2, Origins: []uint32{65002, 65003}}},
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.two-sites.txt", tiersVIP4, "rhi_guard4",
			Announcers{Paths: 2, Origins: []uint32{65002, 65003}}},
		{"bird2.0.12-tiers-show-route-vip6-table-rhi_guard6-all.two-sites.txt", tiersVIP6, "rhi_guard6",
			Announcers{Paths: 2, Origins: []uint32{65002, 65003}}},
		// A prefix the reply is not about has no announcer in it.
		{"bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.two-sites.txt", netip.MustParsePrefix("10.255.0.11/32"), "rhi_guard4", Announcers{}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			a, err := announcersOf(readTranscript(t, filepath.Join(tiersDir, tc.file)), tc.prefix, tc.table)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, a, cmp.Comparer(func(x, y []uint32) bool { return slices.Equal(x, y) })); diff != "" {
				t.Errorf("announcers (-want +got):\n%s", diff)
			}
			if a.Sites() != len(tc.want.Origins) {
				t.Errorf("Sites() = %d, want %d", a.Sites(), len(tc.want.Origins))
			}
		})
	}
}

func TestParseAnnouncersErrors(t *testing.T) {
	two := readTranscript(t, filepath.Join(tiersDir, "bird2.0.12-tiers-show-route-vip-table-rhi_guard4-all.two-sites.txt"))
	if _, err := ParseAnnouncers(two, nil, tiersVIP4, "rhi_guard6"); err == nil || !strings.Contains(err.Error(), `"rhi_guard4"`) {
		t.Errorf("a reply about another table: %v, want an error naming it", err)
	}
	// A BIRD that cannot be asked is never "nobody announces it".
	sock := errors.New("bird: write command: i/o timeout")
	if _, err := ParseAnnouncers(Reply{}, sock, tiersVIP4, "rhi_guard4"); !errors.Is(err, sock) {
		t.Errorf("socket error: %v", err)
	}
	unknown := readTranscript(t, "bird2.0.12-error-show-route-vip-table-nosuch.txt")
	if _, err := announcersOf(unknown, tiersVIP4, "rhi_guard4"); err == nil {
		t.Error("a table BIRD does not know: no error")
	}
	protocols := readTranscript(t, "bird2.0.12-show-protocols.up-vip.txt")
	if _, err := announcersOf(protocols, tiersVIP4, "rhi_guard4"); err == nil {
		t.Error("a reply to another command: no error")
	}
}

// announcersOf reads a captured reply as ParseAnnouncers gets it from Exec.
func announcersOf(r Reply, prefix netip.Prefix, table string) (Announcers, error) {
	reply, err := execResult(r)
	return ParseAnnouncers(reply, err, prefix, table)
}

func TestParsePathsAttributes(t *testing.T) {
	route := func(attrs ...string) Reply {
		lines := []Line{
			{codeRoute, "Table rhi_guard4:"},
			{codeRoute, "10.255.0.10/32       unicast [peer_4 T] * (100) [AS65003i]"},
			{codeRoute, "\tvia 10.99.1.1 on peer"},
			{codeRouteType, "\tType: BGP univ"},
		}
		for _, a := range attrs {
			lines = append(lines, Line{codeRouteAttr, "\t" + a})
		}
		lines = append(lines, Line{CodeOK, ""})
		return Reply{Lines: lines, Code: CodeOK}
	}
	good := []struct {
		attr string
		want string
	}{
		{"BGP.as_path: ", ""},
		{"BGP.as_path: 65000 {65002 65003}", "path=[65000] set=true"},
		{"BGP.as_path: (65010 65011) 65000 4200000000", "path=[65000 4200000000] set=true"},
		{"BGP.community: (65001,666) (65535,65281)", "c=[[65001 666] [65535 65281]]"},
		{"BGP.large_community: (65003, 1, 1) (4200000000, 0, 7)", "lc=[[65003 1 1] [4200000000 0 7]]"},
		{"BGP.next_hop: 10.99.1.1", ""},
		{"BGP.ext_community: (rt, 1, 2)", ""},
	}
	for _, tc := range good {
		paths, err := ParsePaths(route(tc.attr))
		if err != nil || len(paths) != 1 {
			t.Errorf("%q: %d paths, %v", tc.attr, len(paths), err)
			continue
		}
		if got := strings.TrimPrefix(pathSummary(paths[0]), "rhi_guard4 10.255.0.10/32 unicast [peer_4 T] * (100) source=BGP univ"); strings.TrimSpace(got) != tc.want {
			t.Errorf("%q: %q, want %q", tc.attr, got, tc.want)
		}
	}
	if p, _ := ParsePaths(route("BGP.as_path: 65000 {65002 65003}")); len(p) == 1 {
		if _, ok := p[0].Origin(); ok {
			t.Error("a path ending in a set has an origin")
		}
	}
	for _, bad := range []string{
		"BGP.as_path: 65000 x",
		"BGP.as_path: 65000 {65002",
		"BGP.as_path: 65000 65002}",
		"BGP.as_path: 4294967296",
		"BGP.community: (65001)",
		"BGP.community: 65001,666",
		"BGP.community: (65001,666",
		"BGP.large_community: (1, 2)",
		"BGP.large_community: (1, 2, z)",
	} {
		_, err := ParsePaths(route(bad))
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(bad, "\t")) {
			t.Errorf("%q: %v, want an error quoting the line", bad, err)
		}
	}
}

// FuzzPaths feeds framed replies to ParsePaths and ParseAnnouncers: no
// panic, and what they accept is consistent with ParseRoutes.
func FuzzPaths(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("testdata", tiersDir)} {
		files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(strings.NewReader(string(data)), 512, 1<<16)
		r, err := fr.readReply()
		if err != nil {
			return
		}
		routes, rerr := ParseRoutes(r)
		paths, perr := ParsePaths(r)
		if perr == nil {
			if rerr != nil || len(paths) != len(routes) {
				t.Fatalf("ParsePaths took %d paths where ParseRoutes said %d, %v", len(paths), len(routes), rerr)
			}
			for i := range paths {
				if paths[i].Route != routes[i] {
					t.Fatalf("path %d: %+v, route %+v", i, paths[i].Route, routes[i])
				}
			}
		}
		reply, err := execResult(r)
		a, err := ParseAnnouncers(reply, err, tiersVIP4, "rhi_guard4")
		if err != nil {
			return
		}
		if !slices.IsSorted(a.Origins) || len(slices.Compact(slices.Clone(a.Origins))) != len(a.Origins) {
			t.Fatalf("origins %v not sorted and distinct", a.Origins)
		}
		if a.Paths != a.Unattributed+countAttributed(paths) || a.Sites() > a.Paths {
			t.Fatalf("announcers %+v from %d paths", a, len(paths))
		}
	})
}

// countAttributed counts the BGP paths for tiersVIP4 with an origin AS.
func countAttributed(paths []Path) int {
	n := 0
	for _, p := range paths {
		if _, ok := p.Origin(); ok && p.Prefix == tiersVIP4 && strings.HasPrefix(p.Source, "BGP") {
			n++
		}
	}
	return n
}
