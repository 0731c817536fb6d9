package bird

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// defines are the four symbols tiers.conf needs, for the tests.
var defines = TiersDefines(65001, 3, "198.51.100.0/24{32,32}", "2001:db8:100::/48{128,128}")

// TestTiersCombinations runs BIRD's parser over every way tiers.conf is
// meant to be used, and over the ways it is not.
func TestTiersCombinations(t *testing.T) {
	sessions := `
protocol bgp peer_4 from rhi_peer4 { local 192.0.2.11 as 65001; neighbor 192.0.2.1 as 65000; }
protocol bgp peer_6 from rhi_peer6 { local 2001:db8::11 as 65001; neighbor 2001:db8::1 as 65000; }
`
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
		if msg := parse(t, strings.ReplaceAll(string(b), InstallDir+"/", here(t)+"/")); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("TiersDefines with base.conf", func(t *testing.T) {
		conf := "router id 192.0.2.11;\n" + defines + include(t, "base.conf") + include(t, "tiers.conf") + sessions
		if msg := parse(t, conf); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("stock bird.conf with the settings merged", func(t *testing.T) {
		conf := stock(t)
		conf = insertInto(t, conf, "protocol device {", setting(t, settings[0]))
		conf = insertInto(t, conf, "protocol kernel {", setting(t, settings[1]))
		if msg := parse(t, conf+"\n"+defines+include(t, "tiers.conf")+sessions); msg != "" {
			t.Error(msg)
		}
	})
	head := "router id 192.0.2.11;\n"
	refused := []struct{ name, conf, why string }{
		{"without the defines", head + include(t, "base.conf") + include(t, "tiers.conf") + sessions, "CF_SYM_UNDEFINED"},
		{"with the defines after it", head + include(t, "base.conf") + include(t, "tiers.conf") + defines, "CF_SYM_UNDEFINED"},
		{"together with adc.conf", head + defines + include(t, "base.conf") + include(t, "adc.conf") + include(t, "tiers.conf"), "already defined"},
		{"with a define left out", head + strings.Replace(defines, "define RHI_GUARD6", "# define RHI_GUARD6", 1) + include(t, "base.conf") + include(t, "tiers.conf"), "CF_SYM_UNDEFINED"},
		{"with the guard range broken", head + strings.Replace(defines, "198.51.100.0/24", "198.51.100.0/33", 1) + include(t, "base.conf") + include(t, "tiers.conf"), "Invalid prefix length 33"},
	}
	for _, tc := range refused {
		t.Run("refused "+tc.name, func(t *testing.T) {
			msg := parse(t, tc.conf)
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
	for _, name := range []string{DegradedProtocol, "rhi_guard_in", "rhi_guard4_pipe", "rhi_guard6_pipe"} {
		if !tiers[name] {
			t.Errorf("tiers.conf does not define %q", name)
		}
	}
	for _, line := range []string{
		"protocol direct rhi_direct {\n  ipv4;\n  ipv6;\n  interface \"rhi0\";\n}",
		`if proto = "rhi_direct" && net.type = NET_IP4 && net.len = 32 then accept;`,
		`if proto = "rhi_direct" && net.type = NET_IP6 && net.len = 128 then accept;`,
	} {
		if !strings.Contains(ADC(), line) || !strings.Contains(Tiers(), line) {
			t.Errorf("adc.conf and tiers.conf differ on %q", line)
		}
	}
	for _, want := range []string{
		`interface "` + DegradedInterface + `";`,
		"ipv4 table " + GuardTable4 + ";",
		"ipv6 table " + GuardTable6 + ";",
		"bgp_large_community.add((RHI_AS, 1, 1));",
	} {
		if !strings.Contains(Tiers(), want) {
			t.Errorf("tiers.conf lacks %q (the Go constants say so)", want)
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
