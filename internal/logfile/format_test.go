package logfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
)

func TestJournalPriorityPrefixes(t *testing.T) {
	var stderr bytes.Buffer
	l, err := New(Options{Debug: true, Stderr: &stderr, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Logger.Debug("d")
	l.Logger.Info("i")
	l.Logger.Warn("w")
	l.Logger.Error("e")
	l.Flush() // stderr is written on a goroutine of its own
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	want := []string{"<7>", "<6>", "<4>", "<3>"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), stderr.String())
	}
	for i, p := range want {
		if !strings.HasPrefix(lines[i], p+"time=") {
			t.Errorf("line %d = %q, want it to start with %q then the line", i, lines[i], p)
		}
	}
}

func TestNoPrefixesOutsideTheJournal(t *testing.T) {
	var stderr bytes.Buffer
	l, err := New(Options{Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	l.Logger.Error("e")
	l.Flush()
	if !strings.HasPrefix(stderr.String(), "time=") {
		t.Errorf("stderr = %q, want a plain line", stderr.String())
	}
}

// msTime is RFC 3339 with exactly three fractional digits.
var msTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`)

func TestTextHasMillisecondTimestamps(t *testing.T) {
	var stderr bytes.Buffer
	l, err := New(Options{Format: "text", Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	l.Logger.WithField("vip", "10.0.0.1/32").Info("hello")
	l.Flush()
	m := regexp.MustCompile(`^time="?([^" ]+)"? level=info msg=hello vip=10.0.0.1/32\n$`).FindStringSubmatch(stderr.String())
	if m == nil || !msTime.MatchString(m[1]) {
		t.Errorf("line = %q, want time with milliseconds, level, msg, fields", stderr.String())
	}
}

func TestJSONOneObjectPerLine(t *testing.T) {
	dir := t.TempDir()
	mainP := filepath.Join(dir, "main.log")
	var stderr bytes.Buffer
	l, err := New(Options{MainPath: mainP, Format: "json", Stderr: &stderr, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Logger.WithField("vip", "10.0.0.1/32").Info("multi\nline")
	l.Logger.WithError(errors.New("boom")).WithField("iface", "rhi0").Error("set failed")
	file := strings.Split(strings.TrimSuffix(read(t, mainP), "\n"), "\n")
	if len(file) != 2 {
		t.Fatalf("main log has %d lines, want 2:\n%s", len(file), strings.Join(file, "\n"))
	}
	want := []map[string]string{
		{"level": "info", "msg": "multi\nline", "vip": "10.0.0.1/32"},
		{"level": "error", "msg": "set failed", "error": "boom", "iface": "rhi0"},
	}
	for i, line := range file {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		if s, _ := obj["time"].(string); !msTime.MatchString(s) {
			t.Errorf("line %d: time %q, want RFC 3339 with milliseconds", i, obj["time"])
		}
		delete(obj, "time")
		if got := fmt.Sprint(obj); got != fmt.Sprint(want[i]) {
			t.Errorf("line %d = %s, want %s", i, got, fmt.Sprint(want[i]))
		}
	}
	// On stderr: the same objects behind the priority prefix.
	l.Flush()
	errLines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(errLines) != 2 || !strings.HasPrefix(errLines[0], "<6>{") || !strings.HasPrefix(errLines[1], "<3>{") {
		t.Errorf("stderr = %q, want two prefixed objects", stderr.String())
	}
}

func TestUnknownFormatRefused(t *testing.T) {
	if _, err := New(Options{Format: "logfmt"}); err == nil || !strings.Contains(err.Error(), `"logfmt"`) {
		t.Errorf("err = %v, want one naming the format", err)
	}
}

// An error reaches stderr (the journal) while both files still get their
// line, and reaches stderr even when a file cannot be written.
func TestErrorReachesStderrAndFiles(t *testing.T) {
	dir := t.TempDir()
	mainP, errP := filepath.Join(dir, "main.log"), filepath.Join(dir, "error.log")
	var stderr bytes.Buffer
	l, err := New(Options{MainPath: mainP, ErrorPath: errP, Stderr: &stderr, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Logger.Info("info-line")
	l.Logger.WithField("vip", "10.0.0.1/32").Error("error-line")
	l.Flush()
	if !strings.Contains(stderr.String(), "<3>") || !strings.Contains(stderr.String(), "error-line") {
		t.Errorf("stderr = %q, want the error with <3>", stderr.String())
	}
	if !strings.Contains(read(t, mainP), "error-line") || !strings.Contains(read(t, errP), "error-line") {
		t.Errorf("files lack the error line")
	}
	l.Close() // writes to the files now fail
	stderr.Reset()
	l.Logger.Error("after-close")
	l.Flush()
	if !strings.Contains(stderr.String(), "<3>") || !strings.Contains(stderr.String(), "after-close") {
		t.Errorf("stderr = %q, want the error although the files fail", stderr.String())
	}
}

func TestStderrIsJournal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stream")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	tests := []struct {
		env  string
		want bool
	}{
		{fmt.Sprintf("%d:%d", st.Dev, st.Ino), true},
		{fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), false},
		{"", false},
		{"garbage", false},
		{"1:x", false},
	}
	for _, tc := range tests {
		if got := StderrIsJournal(tc.env, f); got != tc.want {
			t.Errorf("StderrIsJournal(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestPriorityOfEveryLevel(t *testing.T) {
	want := map[logrus.Level]string{
		logrus.PanicLevel: "<2>", logrus.FatalLevel: "<2>", logrus.ErrorLevel: "<3>",
		logrus.WarnLevel: "<4>", logrus.InfoLevel: "<6>", logrus.DebugLevel: "<7>", logrus.TraceLevel: "<7>",
	}
	for _, lv := range logrus.AllLevels {
		if got := priority(lv); got != want[lv] {
			t.Errorf("priority(%s) = %s, want %s", lv, got, want[lv])
		}
	}
}

// BenchmarkLine is one info line with two fields, written to both files and
// to stderr (a file here), as the daemon logs a VIP change.
func BenchmarkLine(b *testing.B) {
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			dir := b.TempDir()
			stderr, err := os.Create(filepath.Join(dir, "stderr"))
			if err != nil {
				b.Fatal(err)
			}
			defer stderr.Close()
			l, err := New(Options{MainPath: filepath.Join(dir, "main.log"), ErrorPath: filepath.Join(dir, "error.log"), Format: format, Stderr: stderr, Journal: true})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			e := l.Logger.WithFields(logrus.Fields{"vip": "10.0.0.1/32", "reason": "healthy"})
			b.ReportAllocs()
			for b.Loop() {
				e.Info("vip state changed")
			}
		})
	}
}

func TestPriorityWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewPriorityWriter(&buf, "<3>")
	for _, s := range []string{"config.yaml:3: rise: bad\nconfig.yaml:4: fall: bad\n", "<6>time=x level=info\n", "par", "tial\n", "<4>warn\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	want := "<3>config.yaml:3: rise: bad\n<3>config.yaml:4: fall: bad\n<6>time=x level=info\n<3>partial\n<4>warn\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
