package logfile

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestStderrDropsAreCounted: with stderr not read, lines beyond the queue
// are dropped, counted (StderrDropped), and once stderr is read again the
// next line is preceded by a warning saying how many; the log files got
// every line.
func TestStderrDropsAreCounted(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	mainP := t.TempDir() + "/main.log"
	logs, err := New(Options{Stderr: w, MainPath: mainP, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	const n = queueLines + 2000
	for i := range n {
		logs.Logger.Warn("line " + strconv.Itoa(i) + strings.Repeat("x", 100))
	}
	dropped := logs.StderrDropped()
	if dropped == 0 {
		t.Fatalf("%d lines into an unread pipe: none dropped", n)
	}
	var got bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&got, r); close(read) }()
	logs.Flush() // the queue empties into the reader
	logs.Logger.Warn("after")
	logs.Flush()
	w.Close()
	<-read
	m := regexp.MustCompile(`(?m)^<4>rhi: (\d+) log lines not written to stderr`).FindStringSubmatch(got.String())
	if m == nil || m[1] != strconv.FormatUint(dropped, 10) || logs.StderrDropped() != dropped {
		t.Errorf("drop warning %q, want one saying %d", m, dropped)
	}
	if !strings.Contains(got.String(), "msg=after") {
		t.Errorf("the line after the stall did not reach stderr")
	}
	if c := strings.Count(read2(t, mainP), "level=warning"); c != n+1 {
		t.Errorf("main log has %d lines, want all %d", c, n+1)
	}
}

func read2(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
