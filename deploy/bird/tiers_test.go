package bird

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// defines are the five symbols tiers.conf needs, for the tests.
var defines = Defines{AS: 65001, SiteID: 3221225995, DegradedPrepend: 3,
	Guard4: "198.51.100.0/24{32,32}", Guard6: "2001:db8:100::/48{128,128}"}.String()

// TestTiersCombinations runs BIRD's parser (BIRD 2, and BIRD 3 where its
// root is present) over every way tiers.conf and peer.conf are meant to be
// used, and over the ways they are not.
func TestTiersCombinations(t *testing.T) {
	eachBird(t, testTiersCombinations)
}

func testTiersCombinations(t *testing.T, bb birdBin) {
	sessions := `
protocol bgp peer_4 from rhi_peer4 { local 192.0.2.11 as 65001; neighbor 192.0.2.1 as 65000; }
protocol bgp peer_6 from rhi_peer6 { local 2001:db8::11 as 65001; neighbor 2001:db8::1 as 65000; }
`
	head := "router id 192.0.2.11;\n"
	accepted := []struct{ name, conf string }{
		{"TiersDefines with base.conf", head + defines + include(t, "base.conf") + include(t, "tiers.conf") + sessions},
		// Sites that share an AS: the sessions accept paths with their own AS.
		{"sessions with allow local as", head + defines + include(t, "base.conf") + include(t, "tiers.conf") + strings.ReplaceAll(sessions, "as 65000; }", "as 65000; allow local as; }")},
		// iBGP: the ADC in the router's AS.
		{"iBGP sessions", head + strings.Replace(defines, "RHI_AS = 65001", "RHI_AS = 65000", 1) + include(t, "base.conf") + include(t, "tiers.conf") + strings.ReplaceAll(sessions, "as 65001;", "as 65000;")},
		{"two sessions per family", head + defines + include(t, "base.conf") + include(t, "tiers.conf") + sessions + strings.ReplaceAll(strings.ReplaceAll(sessions, "peer_", "peer2_"), ".1 as", ".2 as")},
		{"peer.conf with an eBGP, an allow local as and an iBGP client", "router id 192.0.2.1;\n" + include(t, "peer.conf") + `
protocol bgp dc1_4 from rhi_adc4 { local 192.0.2.1 as 65000; neighbor 192.0.2.11 as 65001; }
protocol bgp dc2_4 from rhi_adc4 { local 192.0.2.1 as 65000; neighbor 192.0.2.12 as 65001; }
protocol bgp dc3_4 from rhi_adc4 { local 192.0.2.1 as 65000; neighbor 192.0.2.13 as 65000; rr client; }
protocol bgp dc3_6 from rhi_adc6 { local 2001:db8::1 as 65000; neighbor 2001:db8::13 as 65000; rr client; }
`},
	}
	t.Run("examples/bird-tiers.conf", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("examples", "bird-tiers.conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^include "([^"]*)";`).FindAllStringSubmatch(string(b), -1) {
			if filepath.Dir(m[1]) != InstallDir {
				t.Errorf("examples/bird-tiers.conf includes %q, not a file of %s", m[1], InstallDir)
			}
		}
		if msg := bb.parse(t, strings.ReplaceAll(string(b), InstallDir+"/", here(t)+"/")); msg != "" {
			t.Error(msg)
		}
	})
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			if msg := bb.parse(t, tc.conf); msg != "" {
				t.Error(msg)
			}
		})
	}
	t.Run("stock bird.conf with the settings merged", func(t *testing.T) {
		conf := bb.stockConf(t)
		conf = insertInto(t, conf, "protocol device {", setting(t, settings[0]))
		conf = insertInto(t, conf, "protocol kernel {", setting(t, settings[1]))
		if msg := bb.parse(t, conf+"\n"+defines+include(t, "tiers.conf")+sessions); msg != "" {
			t.Error(msg)
		}
	})
	refused := []struct{ name, conf, why string }{
		{"without the defines", head + include(t, "base.conf") + include(t, "tiers.conf") + sessions, "CF_SYM_UNDEFINED"},
		{"with the defines after it", head + include(t, "base.conf") + include(t, "tiers.conf") + defines, "CF_SYM_UNDEFINED"},
		{"together with adc.conf", head + defines + include(t, "base.conf") + include(t, "adc.conf") + include(t, "tiers.conf"), "already defined"},
		{"with the guard range broken", head + strings.Replace(defines, "198.51.100.0/24", "198.51.100.0/33", 1) + include(t, "base.conf") + include(t, "tiers.conf"), "Invalid prefix length 33"},
	}
	for _, name := range []string{"RHI_AS", "RHI_SITE_ID", "RHI_DEGRADED_PREPEND", "RHI_GUARD4", "RHI_GUARD6"} {
		refused = append(refused, struct{ name, conf, why string }{
			"without " + name,
			head + strings.Replace(defines, "define "+name+" ", "# define "+name+" ", 1) + include(t, "base.conf") + include(t, "tiers.conf"),
			"CF_SYM_UNDEFINED",
		})
	}
	for _, tc := range refused {
		t.Run("refused "+tc.name, func(t *testing.T) {
			if !strings.Contains(tc.conf, "include") {
				t.Fatal("test case without an include")
			}
			msg := bb.parse(t, tc.conf)
			if msg == "" {
				t.Fatal("BIRD accepts it: update tiers.conf's comments and docs/bird.md, which say it does not")
			}
			if !strings.Contains(msg, tc.why) {
				t.Errorf("BIRD refuses it, but not for %q: %s", tc.why, msg)
			}
		})
	}
}

// TestTiersKeepsADCNames: a host moves from adc.conf to tiers.conf by
// changing one include, so tiers.conf defines every name adc.conf does,
// with rhi0's direct protocol and export lines unchanged.
func TestTiersKeepsADCNames(t *testing.T) {
	def := regexp.MustCompile(`(?m)^(?:protocol \w+|filter|template \w+|function) (\w+)`)
	names := func(conf string) map[string]bool {
		out := map[string]bool{}
		for _, m := range def.FindAllStringSubmatch(conf, -1) {
			out[m[1]] = true
		}
		return out
	}
	tiers := names(Tiers())
	for name := range names(ADC()) {
		if !tiers[name] {
			t.Errorf("tiers.conf does not define %q, which adc.conf does", name)
		}
	}
	for _, name := range []string{DegradedProtocol, LastResortProtocol, "rhi_guard_in", "rhi_guard4_pipe", "rhi_guard6_pipe", "rhi_degrade", "rhi_last_resort"} {
		if !tiers[name] {
			t.Errorf("tiers.conf does not define %q", name)
		}
	}
	for _, line := range []string{
		"protocol direct " + FullProtocol + " {\n  ipv4;\n  ipv6;\n  interface \"" + FullInterface + "\";\n}",
	} {
		if !strings.Contains(ADC(), line) || !strings.Contains(Tiers(), line) {
			t.Errorf("adc.conf and tiers.conf differ on %q", line)
		}
	}
	for _, want := range []string{
		"protocol direct " + DegradedProtocol + " {",
		`interface "` + DegradedInterface + `";`,
		"protocol direct " + LastResortProtocol + " {",
		`interface "` + LastResortInterface + `";`,
		"ipv4 table " + GuardTable4 + ";",
		"ipv6 table " + GuardTable6 + ";",
	} {
		if !strings.Contains(Tiers(), want) {
			t.Errorf("tiers.conf lacks %q (the Go constants say so)", want)
		}
	}
}

// TestTiersAttributes checks that the export filter's marks are the ones the
// Go constants (which the guard and `rhi verify` read by) name: the site
// identity on every route, the degraded and last-resort communities, the
// last resort's GRACEFUL_SHUTDOWN and prepend, and the preferences that make
// a VIP on two interfaces go out at the lower tier. The lab tests check what
// BIRD really exports.
func TestTiersAttributes(t *testing.T) {
	conf := code(Tiers())
	body := func(open string) string {
		_, after, ok := strings.Cut(conf, open)
		if !ok {
			t.Fatalf("tiers.conf has no %q", open)
		}
		b, _, _ := strings.Cut(after, "\n}")
		return b
	}
	vips := body("filter rhi_vips {")
	site := fmt.Sprintf("bgp_large_community.add((RHI_AS, %d, RHI_SITE_ID));", SiteData1)
	if strings.Count(vips, site) != 1 || !strings.Contains(vips, site+"\n  if proto = \""+DegradedProtocol+"\" then rhi_degrade();\n  if proto = \""+LastResortProtocol+"\" then rhi_last_resort();\n  accept;") {
		t.Errorf("rhi_vips does not tag every exported route with %q before its tier's attributes:\n%s", site, vips)
	}
	for _, p := range []string{FullProtocol, DegradedProtocol, LastResortProtocol} {
		if !strings.Contains(vips, `proto != "`+p+`"`) {
			t.Errorf("rhi_vips does not let %s's routes through", p)
		}
	}
	degrade := body("function rhi_degrade() {")
	if want := fmt.Sprintf("bgp_large_community.add((RHI_AS, %d, %d));", TierData1, DegradedData2); !strings.Contains(degrade, want) {
		t.Errorf("rhi_degrade lacks %q", want)
	}
	last := body("function rhi_last_resort() {")
	for _, want := range []string{
		fmt.Sprintf("bgp_community.add((%d, %d));", GracefulShutdownAS, GracefulShutdownValue),
		fmt.Sprintf("bgp_large_community.add((RHI_AS, %d, %d));", TierData1, LastResortData2),
	} {
		if !strings.Contains(last, want) {
			t.Errorf("rhi_last_resort lacks %q", want)
		}
	}
	if n := strings.Count(last, "bgp_path.prepend(RHI_AS);"); n != LastResortPrepend {
		t.Errorf("rhi_last_resort prepends RHI_AS %d times, want %d", n, LastResortPrepend)
	}
	if n := strings.Count(degrade, "bgp_path.prepend(RHI_AS);"); n != MaxDegradedPrepend {
		t.Errorf("rhi_degrade prepends RHI_AS up to %d times, want up to %d", n, MaxDegradedPrepend)
	}
	pref := func(p string) int {
		b := body("protocol direct " + p + " {")
		m := regexp.MustCompile(`ipv4 \{ preference (\d+); \};\n  ipv6 \{ preference (\d+); \};`).FindStringSubmatch(b)
		if m == nil {
			return 240 // BIRD's default for a direct protocol
		}
		if m[1] != m[2] {
			t.Errorf("%s: preference %s for ipv4, %s for ipv6", p, m[1], m[2])
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if full, deg, lr := pref(FullProtocol), pref(DegradedProtocol), pref(LastResortProtocol); !(full < deg && deg < lr) {
		t.Errorf("preferences full %d, degraded %d, last resort %d: a VIP on two interfaces must go out at the lower tier", full, deg, lr)
	}
	in := code(Peer())
	if !strings.Contains(in, fmt.Sprintf("if (%d, %d) ~ bgp_community then bgp_local_pref = 0;", GracefulShutdownAS, GracefulShutdownValue)) ||
		strings.Count(in, "import filter rhi_adc_in;") != 2 || strings.Count(in, "add paths tx;") != 2 {
		t.Error("peer.conf: the router must honour GRACEFUL_SHUTDOWN on both templates' imports and send every path (add paths tx)")
	}
}

// TestSiteID: a router id stands for the number whose bytes it writes.
func TestSiteID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
		err  string
	}{
		{"192.0.2.11", 3221225995, ""},
		{"10.99.1.2", 174260482, ""},
		{"255.255.255.255", 4294967295, ""},
		{"0.0.0.1", 1, ""},
		{"0.0.0.0", 0, `router id "0.0.0.0": 0 is no site identity`},
		{"2001:db8::1", 0, `router id "2001:db8::1": not an IPv4 address`},
	} {
		got, err := SiteID(netip.MustParseAddr(tc.in))
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("SiteID(%s) = %d, %v; want %d, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestTiersCannotChangeForwarding checks the shape that keeps the guard's
// routes out of master4, the kernel and the other sessions: the sessions'
// channels live in the guard tables, import through rhi_guard_in only and
// export through rhi_vips only; the pipes take nothing back into master;
// tiers.conf has no kernel protocol.
func TestTiersCannotChangeForwarding(t *testing.T) {
	conf := code(Tiers())
	for _, want := range []string{
		"table rhi_guard4;\n    igp table master4;",
		"table rhi_guard6;\n    igp table master6;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("tiers.conf: a session channel lacks %q", want)
		}
	}
	counts := map[string]int{
		"import filter rhi_guard_in;": 2,
		"export filter rhi_vips;":     2,
		"import none;":                2, // the two pipes
		"peer table rhi_guard":        2,
	}
	for s, n := range counts {
		if got := strings.Count(conf, s); got != n {
			t.Errorf("tiers.conf: %q %d times, want %d", s, got, n)
		}
	}
	for _, never := range []string{"protocol kernel", "import all", "export all", "import where", "export where proto = \"peer"} {
		if strings.Contains(conf, never) {
			t.Errorf("tiers.conf: %q", never)
		}
	}
	for _, want := range []string{
		"if net.type = NET_IP4 && net.len = 32 && net ~ RHI_GUARD4 then accept;",
		"if net.type = NET_IP6 && net.len = 128 && net ~ RHI_GUARD6 then accept;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("tiers.conf: rhi_guard_in lacks %q", want)
		}
	}
}

// code returns conf without its comments.
func code(conf string) string {
	var out []string
	for _, line := range strings.Split(conf, "\n") {
		c, _, _ := strings.Cut(line, "#")
		out = append(out, c)
	}
	return strings.Join(out, "\n")
}
