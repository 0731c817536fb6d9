package bird

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// birdBin is one BIRD to run the parser of: the bird on PATH (BIRD 2 on
// the hosts and in CI) and BIRD 3 from a Debian 13 root when one is there.
type birdBin struct {
	name  string   // "bird2", "bird3"
	argv  []string // the command that runs it, without arguments
	stock []string // where its package keeps Debian's stock bird.conf
}

// bird3Root is the Debian 13 root with bird3 installed that CI builds; the
// environment variable RHI_BIRD3_ROOT names another.
const bird3Root = "/var/cache/rhi-ci/trixie-bird3"

// birds lists the BIRDs present here, or skips: BIRD 2 from PATH, BIRD 3 run
// from its root with the root's own loader and libraries.
func birds(t *testing.T) []birdBin {
	t.Helper()
	var out []birdBin
	if path, err := exec.LookPath("bird"); err == nil {
		out = append(out, birdBin{name: "bird2", argv: []string{path}, stock: []string{"/usr/share/bird2/bird.conf", "/etc/bird/bird.conf"}})
	}
	root := os.Getenv("RHI_BIRD3_ROOT")
	if root == "" {
		root = bird3Root
	}
	if _, err := os.Stat(filepath.Join(root, "usr/sbin/bird")); err == nil {
		out = append(out, birdBin{
			name: "bird3",
			argv: []string{filepath.Join(root, "lib64/ld-linux-x86-64.so.2"), "--library-path",
				filepath.Join(root, "lib/x86_64-linux-gnu") + ":" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"),
				filepath.Join(root, "usr/sbin/bird")},
			stock: []string{filepath.Join(root, "usr/share/bird3/bird.conf"), filepath.Join(root, "etc/bird/bird.conf")},
		})
	}
	if len(out) == 0 {
		t.Skip("no BIRD is installed")
	}
	return out
}

// eachBird runs f as a subtest for every BIRD present.
// The BIRDs run side by side: each parse is a process that mostly waits
// to start.
func eachBird(t *testing.T, f func(t *testing.T, b birdBin)) {
	for _, b := range birds(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// parse runs BIRD's own parser over conf, written to a file in a temporary
// directory, and returns its complaint, or "" when BIRD accepts it.
func (b birdBin) parse(t *testing.T, conf string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bird.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	argv := append(slices.Clone(b.argv), "-p", "-c", path)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
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

// stock returns Debian's stock bird.conf as b's package has it (its pristine
// copy first: /etc/bird/bird.conf may have been edited), or skips.
func (b birdBin) stockConf(t *testing.T) string {
	t.Helper()
	for _, p := range b.stock {
		if data, err := os.ReadFile(p); err == nil {
			return string(data)
		}
	}
	t.Skipf("no stock bird.conf of the %s package here", b.name)
	return ""
}

// TestExamplesParse runs BIRD's parser over the example host files, which
// include the shipped files, so a syntax error in either fails here.
// examples/bird.conf names the files where the package installs them.
func TestExamplesParse(t *testing.T) {
	eachBird(t, testExamplesParse)
}

func testExamplesParse(t *testing.T, bb birdBin) {
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
		if msg := bb.parse(t, conf); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("peer.conf", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("examples", "peer.conf"))
		if err != nil {
			t.Fatal(err)
		}
		conf := strings.ReplaceAll(string(b), `include "../peer.conf";`, include(t, "peer.conf"))
		if msg := bb.parse(t, conf); msg != "" {
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
	eachBird(t, testStockDebianConfig)
}

func testStockDebianConfig(t *testing.T, b birdBin) {
	conf := b.stockConf(t)
	t.Run("with the include appended", func(t *testing.T) {
		if msg := b.parse(t, conf+"\n"+include(t, "adc.conf")); msg != "" {
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
		if msg := b.parse(t, merged+"\n"+include(t, "adc.conf")); msg != "" {
			t.Errorf("%s\n%s", msg, merged)
		}
	})
	t.Run("base.conf is refused", func(t *testing.T) {
		if msg := b.parse(t, conf+"\n"+include(t, "base.conf")+include(t, "adc.conf")); msg == "" {
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
