package main

import (
	"path/filepath"
	"strings"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rhi-daemon/rhi/internal/config"
)

type fakeReloader struct{ got []*config.Config }

func (f *fakeReloader) Reload(c *config.Config) { f.got = append(f.got, c) }

// TestReloadEveryInvalidFile reloads each invalid testdata config: none may
// reach the daemon, and each is logged with its problems.
func TestReloadEveryInvalidFile(t *testing.T) {
	started, err := config.Load("../../internal/config/testdata/seed.yaml")
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
		if reload(f, started, d, log) {
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
	if !reload("../../internal/config/testdata/seed.yaml", started, d, log) || len(d.got) != 1 {
		t.Error("a valid reload was not handed over")
	}
	if reload("../../deploy/rhi.yaml", &config.Config{Interface: "eth9"}, d, log) || len(d.got) != 1 {
		t.Error("a reload changing the interface was handed over")
	}
}

// TestReloadKeepsTheOwnershipRecord: the record is read at start-up, so a
// reload that moves it is rejected rather than half applied.
func TestReloadKeepsTheOwnershipRecord(t *testing.T) {
	started, err := config.Load("../../internal/config/testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	moved := *started
	moved.StateFile = "/elsewhere/owned"
	if got := restartOnly(started, &moved); len(got) != 1 || got[0] != "state_file" {
		t.Errorf("restartOnly = %v, want [state_file]", got)
	}
}
