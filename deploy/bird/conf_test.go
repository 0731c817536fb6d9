package bird

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// parse runs BIRD's own parser over conf, written to a file in a temporary
// directory, and returns its complaint, or "" when BIRD accepts it.
func parse(t *testing.T, conf string) string {
	t.Helper()
	bird, err := exec.LookPath("bird")
	if err != nil {
		t.Skip("bird is not installed")
	}
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bird, "-p", "-c", path).CombinedOutput()
	if err != nil {
		return strings.TrimSpace(err.Error() + ": " + string(out))
	}
	return ""
}

// here is deploy/bird as an absolute path, for includes.
func here(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// include is an include directive for a file of this directory.
func include(t *testing.T, name string) string {
	return "include \"" + filepath.Join(here(t), name) + "\";\n"
}

// stock returns Debian's stock bird.conf of the BIRD the tests run, or
// skips: RHI_BIRD_STOCK_CONF when set (make integration-bird3 sets it to the
// bird3 package's in its Debian 13 root, as its bird is first on PATH), else
// the installed bird2 or bird3 package's (its pristine copy first:
// /etc/bird/bird.conf may have been edited).
func stock(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RHI_BIRD_STOCK_CONF"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("RHI_BIRD_STOCK_CONF: %v", err)
		}
		return string(b)
	}
	for _, p := range []string{"/usr/share/bird2/bird.conf", "/usr/share/bird3/bird.conf", "/etc/bird/bird.conf"} {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	t.Skip("no stock bird.conf of the bird2 or bird3 package here")
	return ""
}

// TestExamplesParse runs BIRD's parser over the example host files, which
// include the shipped files, so a syntax error in either fails here.
// examples/bird.conf names the files where the package installs them.
func TestExamplesParse(t *testing.T) {
	t.Run("bird.conf", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("examples", "bird.conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^include "([^"]*)";`).FindAllStringSubmatch(string(b), -1) {
			if filepath.Dir(m[1]) != InstallDir {
				t.Errorf("examples/bird.conf includes %q, not a file of %s", m[1], InstallDir)
			}
		}
		conf := strings.ReplaceAll(string(b), InstallDir+"/", here(t)+"/")
		if msg := parse(t, conf); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("peer.conf", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("examples", "peer.conf"))
		if err != nil {
			t.Fatal(err)
		}
		conf := strings.ReplaceAll(string(b), `include "../peer.conf";`, include(t, "peer.conf"))
		if msg := parse(t, conf); msg != "" {
			t.Error(msg)
		}
	})
}

// settings are the lines of base.conf an operator merges into a bird.conf of
// their own; the comments of adc.conf and examples/bird.conf must quote them.
var settings = []*regexp.Regexp{
	regexp.MustCompile(`scan time [0-9]+;`),
	regexp.MustCompile(`netlink rx buffer [0-9]+;`),
}

// setting returns what base.conf's configuration (not its comments) says
// for re.
func setting(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	var found []string
	for _, line := range strings.Split(Base(), "\n") {
		code, _, _ := strings.Cut(line, "#")
		found = append(found, re.FindAllString(code, -1)...)
	}
	if len(found) != 1 {
		t.Fatalf("base.conf sets %q %d times, want once", re, len(found))
	}
	return found[0]
}

// TestStockDebianConfig is what README.Debian tells an operator to do with
// Debian's stock /etc/bird/bird.conf: append the adc.conf include, and merge
// base.conf's two settings into the stock device and kernel protocols.
// Including base.conf there is refused, as the files say.
func TestStockDebianConfig(t *testing.T) {
	conf := stock(t)
	t.Run("with the include appended", func(t *testing.T) {
		if msg := parse(t, conf+"\n"+include(t, "adc.conf")); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("with the settings merged", func(t *testing.T) {
		var lines []string
		for _, re := range settings {
			lines = append(lines, setting(t, re))
		}
		merged := insertInto(t, conf, "protocol device {", lines[0])
		merged = insertInto(t, merged, "protocol kernel {", lines[1]) // the first: ipv4
		if msg := parse(t, merged+"\n"+include(t, "adc.conf")); msg != "" {
			t.Errorf("%s\n%s", msg, merged)
		}
	})
	t.Run("base.conf is refused", func(t *testing.T) {
		if msg := parse(t, conf+"\n"+include(t, "base.conf")+include(t, "adc.conf")); msg == "" {
			t.Error("BIRD accepts base.conf with the stock bird.conf: update the comments that say it does not")
		}
	})
}

// insertInto puts line after the first occurrence of open in conf.
func insertInto(t *testing.T, conf, open, line string) string {
	t.Helper()
	before, after, ok := strings.Cut(conf, open)
	if !ok {
		t.Fatalf("the stock bird.conf has no %q", open)
	}
	return before + open + "\n\t" + line + after
}

// TestSettingsDocumented checks that what the comments tell an operator to
// merge is what base.conf sets.
func TestSettingsDocumented(t *testing.T) {
	ex, err := os.ReadFile(filepath.Join("examples", "bird.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range settings {
		want := setting(t, re)
		for name, text := range map[string]string{"adc.conf": ADC(), "base.conf": Base(), "examples/bird.conf": string(ex)} {
			if got := re.FindAllString(text, -1); len(got) == 0 || strings.Join(got, "") != strings.Repeat(want, len(got)) {
				t.Errorf("%s documents %q, base.conf sets %q", name, got, want)
			}
		}
	}
}

// TestExportFilter checks the shape of the export: both templates export
// through rhi_vips, which accepts host routes of rhi_direct only.
func TestExportFilter(t *testing.T) {
	if n := strings.Count(ADC(), "export filter rhi_vips;"); n != 2 {
		t.Errorf("adc.conf: %d channels export through rhi_vips, want 2 (rhi_peer4, rhi_peer6)", n)
	}
	for _, want := range []string{
		`if proto = "rhi_direct" && net.type = NET_IP4 && net.len = 32 then accept;`,
		`if proto = "rhi_direct" && net.type = NET_IP6 && net.len = 128 then accept;`,
	} {
		if !strings.Contains(ADC(), want) {
			t.Errorf("adc.conf: filter rhi_vips lacks %q", want)
		}
	}
	if strings.Contains(ADC(), "export where") || strings.Contains(ADC(), "export all") {
		t.Error("adc.conf: a channel exports other than through rhi_vips")
	}
}
