package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/logfile"
)

func TestCheckConfigSeed(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"check-config", "--config", "../../internal/config/testdata/seed.yaml"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	// The printed effective config is itself a valid config with defaults.
	cfg, err := config.Parse("printed", out.Bytes(), apisix.UpstreamKey)
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, out.String())
	}
	if len(cfg.VIPs) != 3 || cfg.Bird.Socket != "/run/bird/bird.ctl" || cfg.VIPs[2].Condition != config.Any {
		t.Errorf("printed config lost something:\n%s", out.String())
	}
}

// TestShippedExampleIsValid keeps the packaged example config loadable.
func TestShippedExampleIsValid(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"check-config", "--config", "../../deploy/rhi.yaml"}, &out, &errb); code != exitOK {
		t.Fatalf("deploy/rhi.yaml: exit %d: %s", code, errb.String())
	}
}

// TestShippedConffileAnnouncesNothing: the package's /etc/rhi/rhi.yaml is
// valid and lists no VIP, so rhi started before anyone edits it (at boot,
// once enabled) puts nothing on rhi0.
func TestShippedConffileAnnouncesNothing(t *testing.T) {
	cfg, err := config.Load("../../deploy/rhi.minimal.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.VIPs) != 0 {
		t.Errorf("deploy/rhi.minimal.yaml has %d VIPs, want none", len(cfg.VIPs))
	}
	example, err := config.Load("../../deploy/rhi.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	// What the minimal file sets, it sets as the example does.
	if cfg.ControlURL != example.ControlURL || cfg.Interface != example.Interface || cfg.MainLog != example.MainLog ||
		cfg.ErrorLog != example.ErrorLog || cfg.Bird.Socket != example.Bird.Socket || cfg.StatusListen != example.StatusListen {
		t.Errorf("deploy/rhi.minimal.yaml and deploy/rhi.yaml disagree on a host setting:\n%+v\n%+v", cfg, example)
	}
}

// TestCheckConfigQuiet: the unit's ExecStartPre and ExecReload use --quiet,
// which prints nothing for a valid file and the same problems for a bad one.
func TestCheckConfigQuiet(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"check-config", "--quiet", "--config", "../../deploy/rhi.yaml"}, &out, &errb); code != exitOK || out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("valid file: exit %d, stdout %q, stderr %q; want 0 and nothing printed", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	bad := "../../internal/config/testdata/invalid/bad_address.yaml"
	want, err := os.ReadFile(strings.TrimSuffix(bad, ".yaml") + ".err")
	if err != nil {
		t.Fatal(err)
	}
	code := run([]string{"check-config", "--quiet", "--config", bad}, &out, &errb)
	got := strings.ReplaceAll(errb.String(), filepath.Dir(bad)+"/", "")
	if code != exitBadInput || out.Len() != 0 || !strings.Contains(got, strings.TrimSpace(string(want))) {
		t.Errorf("invalid file: exit %d, stdout %q, stderr %q; want %d and the problems on stderr", code, out.String(), got, exitBadInput)
	}
}

func TestCheckConfigInvalid(t *testing.T) {
	files, _ := filepath.Glob("../../internal/config/testdata/invalid/*.yaml")
	if len(files) == 0 {
		t.Fatal("no invalid configs found")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{"check-config", "--config", f}, &out, &errb); code != exitBadInput {
				t.Fatalf("exit %d, want %d", code, exitBadInput)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			// The goldens name the file by its base name.
			got := strings.ReplaceAll(errb.String(), filepath.Dir(f)+"/", "")
			if !strings.Contains(got, strings.TrimSpace(string(want))) {
				t.Errorf("stderr:\n%s\nwant it to hold:\n%s", got, want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty on an invalid config: %q", out.String())
			}
		})
	}
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		out  string // substring of stdout
		err  string // substring of stderr
	}{
		{"no args", nil, exitBadInput, "", "Usage:"},
		{"unknown", []string{"frobnicate"}, exitBadInput, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, exitOK, "rhi dev", ""},
		{"help", []string{"-h"}, exitOK, "check-config", ""},
		{"run help", []string{"run", "-h"}, exitOK, "--config", ""},
		{"bad flag", []string{"check-config", "--nope"}, exitBadInput, "", "flag provided but not defined"},
		{"stray arg", []string{"check-config", "extra"}, exitBadInput, "", `unexpected argument "extra"`},
		{"missing file", []string{"check-config", "--config", "/nonexistent/rhi.yaml"}, exitBadInput, "", "/nonexistent/rhi.yaml"},
		{"run with bad config touches nothing", []string{"run", "--config", "../../internal/config/testdata/invalid/bad_condition.yaml"}, exitBadInput, "", "condition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.out)
			}
			if !strings.Contains(errb.String(), tt.err) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.err)
			}
		})
	}
}

// TestJournalPriorities: with stderr the journal (main wraps it in a
// PriorityWriter), a config error is an error line and the daemon's own
// lines keep their priorities.
func TestJournalPriorities(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"run", "--config", "../../internal/config/testdata/invalid/bad_condition.yaml"}, &out, logfile.NewPriorityWriter(&errb, "<3>"))
	if code != exitBadInput {
		t.Fatalf("exit %d", code)
	}
	for _, l := range strings.SplitAfter(errb.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "<3>") {
			t.Errorf("line %q has no error priority", l)
		}
	}
	if !strings.Contains(errb.String(), "condition") {
		t.Errorf("stderr %q lacks the problem", errb.String())
	}
}
