package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/config"
)

type fakeReloader struct{ got []*config.Config }

func (f *fakeReloader) Reload(c *config.Config) <-chan struct{} {
	f.got = append(f.got, c)
	done := make(chan struct{})
	close(done)
	return done
}

// accepted says whether reload handed the config over.
func accepted(_ <-chan struct{}, err error) bool { return err == nil }

// TestReloadEveryInvalidFile reloads each invalid testdata config: none may
// reach the daemon, and each is logged with its problems.
func TestReloadEveryInvalidFile(t *testing.T) {
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../internal/config/testdata/invalid/*.yaml")
	if len(files) < 20 {
		t.Fatalf("only %d invalid configs found", len(files))
	}
	for _, f := range files {
		log, hook := logtest.NewNullLogger()
		d := &fakeReloader{}
		if accepted(reload(f, started, d, log)) {
			t.Errorf("%s: reload accepted", filepath.Base(f))
		}
		if len(d.got) != 0 {
			t.Errorf("%s: the daemon got the config", filepath.Base(f))
		}
		e := hook.LastEntry()
		if e == nil || !strings.Contains(e.Message, "reload rejected") || !strings.Contains(e.Data["error"].(error).Error(), filepath.Base(f)) {
			t.Errorf("%s: log %v", filepath.Base(f), e)
		}
	}
	log, _ := logtest.NewNullLogger()
	d := &fakeReloader{}
	if !accepted(reload("../../internal/config/testdata/seed.yaml", started, d, log)) || len(d.got) != 1 {
		t.Error("a valid reload was not handed over")
	}
	if accepted(reload("../../deploy/rhi.yaml", &config.Config{Interface: "eth9"}, d, log)) || len(d.got) != 1 {
		t.Error("a reload changing the interface was handed over")
	}
}

// TestReloadWarnsOfIgnoredKeys: a reloaded file with fail_open.release is
// applied, and the key is named with its line in a warning.
func TestReloadWarnsOfIgnoredKeys(t *testing.T) {
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../internal/config/testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rhi.yaml")
	text := string(b) + "\nfail_open:\n  min_other_sites: 1\n  release: 30s\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(text, "\n") // release is the last line
	log, hook := logtest.NewNullLogger()
	d := &fakeReloader{}
	if !accepted(reload(path, started, d, log)) || len(d.got) != 1 {
		t.Fatal("the reload was not handed over")
	}
	want := fmt.Sprintf("rhi.yaml:%d: fail_open.release: no longer used, ignored", line)
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, want) {
			return
		}
	}
	t.Errorf("no warning %q in %v", want, hook.AllEntries())
}

// TestReloadKeepsTheOwnershipRecord: the record is read at start-up, so a
// reload that moves it is rejected rather than half applied, and the log
// names the key. (config's TestDiffKeepsTheOwnershipRecord holds the
// rule.)
func TestReloadKeepsTheOwnershipRecord(t *testing.T) {
	started, err := config.Load("../../internal/config/testdata/seed.yaml", apisix.UpstreamKey)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile("../../internal/config/testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(moved, append(seed, "\nstate_file: /elsewhere/owned\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	log, hook := logtest.NewNullLogger()
	d := &fakeReloader{}
	if accepted(reload(moved, started, d, log)) || len(d.got) != 0 {
		t.Fatal("a reload moving the ownership record was handed over")
	}
	if e := hook.LastEntry(); e == nil || e.Data["keys"] != "state_file" || !strings.Contains(e.Message, "only on restart") {
		t.Errorf("log %v, want keys=state_file and \"only on restart\"", e)
	}
}

// TestLoadedConfigsBuildAClient: config.Load checks every value the control
// API client refuses, so healthFor always gets a client for a reloaded
// configuration and reload need not build one to find out. Each URL, mode
// and timeout either fails to load or makes a client. (Load is Parse of
// the file's bytes: the test parses, and creates no 400 files.)
func TestLoadedConfigsBuildAClient(t *testing.T) {
	urls := []string{"http://127.0.0.1:9090", "https://[::1]:9090/", "http://localhost", "http://h/base/", "ftp://h", "http://",
		"http://:80", "http://h?x=1", "http://h?", "http://h#f", "http://u:p@h", "http://h:0", "http://h:65536", "h:80", "http://[::1", "http://%zz"}
	modes := []string{"per_upstream", "list", "auto", "List", ""}
	timeouts := []string{"5s", "1", "0s", "-1s", "1ns"}
	loaded := 0
	for i, u := range urls {
		for j, m := range modes {
			for k, to := range timeouts {
				name := fmt.Sprintf("%d-%d-%d.yaml", i, j, k)
				text := fmt.Sprintf("apisix_control_url: %q\napisix_poll_mode: %q\napisix_timeout: %q\n", u, m, to)
				cfg, err := config.Parse(name, []byte(text), apisix.UpstreamKey)
				if err != nil {
					continue
				}
				loaded++
				if _, err := newHealth(cfg); err != nil {
					t.Errorf("url %q, mode %q, timeout %q: loads, but the client refuses it: %v", u, m, to, err)
				}
				log, hook := logtest.NewNullLogger()
				if h := healthFor(log)(cfg); h == nil {
					t.Errorf("url %q, mode %q, timeout %q: healthFor gave no client (%v)", u, m, to, hook.LastEntry())
				}
			}
		}
	}
	if loaded < 10 || loaded == len(urls)*len(modes)*len(timeouts) {
		t.Errorf("%d of %d configs loaded: the cases test too little", loaded, len(urls)*len(modes)*len(timeouts))
	}
}
