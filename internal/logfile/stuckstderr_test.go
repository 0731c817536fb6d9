package logfile

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestStuckStderrDoesNotBlockLogging: under systemd stderr is a
// pipe to journald; when journald stalls (or an operator's terminal is
// stopped with Ctrl-S, or `rhi run | less` waits), that pipe fills after
// 64 KiB and every log call blocks — on the poll loop's goroutine, so the
// loop freezes with its VIPs announced whatever their health (seen in a
// netns: "stalled: no tick finished for 12s" after 400 lines). A log line
// must never wait on stderr: drop (and count) what it cannot take.
func TestStuckStderrDoesNotBlockLogging(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // never read: a stalled journald
	defer w.Close()
	logs, err := New(Options{Stderr: w})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		line := strings.Repeat("x", 200)
		for range 2000 { // 400 KiB: six times a pipe's buffer
			logs.Logger.WithField("vip", "10.0.0.100/32").Warn(line)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second): // a hang detector, not a timing goal
		t.Fatal("logging blocked on a stderr nobody reads: the poll loop would freeze")
	}
}
