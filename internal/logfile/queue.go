package logfile

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Bounds of the stderr queue: lines waiting for stderr beyond either are
// dropped (and counted), never waited for.
const (
	queueLines = 4096
	queueBytes = 4 << 20
)

// closeWait bounds how long Flush (and Close) waits for the queued lines to reach
// stderr: a stderr nobody reads must not stop rhi from exiting.
const closeWait = 2 * time.Second

// stderrQueue writes lines to stderr on a goroutine of its own, so that a
// log call never waits on stderr: under systemd stderr is a pipe to
// journald, and a journald that stalls (or a `rhi run | less` that waits,
// a terminal stopped with Ctrl-S) fills it after 64 KiB, after which every
// write blocks, on whatever goroutine logs: the poll loop's too. Lines the
// queue cannot take are dropped and counted; the next line that reaches
// stderr is preceded by a warning saying how many. The files keep
// synchronous writes: a full disk fails a write, it does not block it.
type stderrQueue struct {
	w       io.Writer
	journal bool // prefix the drop warning with a syslog priority
	lines   chan []byte
	flushes chan chan struct{}
	queued  atomic.Int64  // bytes in lines
	dropped atomic.Uint64 // lines dropped, ever
	unsaid  atomic.Uint64 // lines dropped since the last warning
}

// newStderrQueue starts the queue's goroutine, which lives as long as the
// process: lines logged after Logs.Close still reach stderr.
func newStderrQueue(w io.Writer, journal bool) *stderrQueue {
	q := &stderrQueue{w: w, journal: journal, lines: make(chan []byte, queueLines), flushes: make(chan chan struct{})}
	go q.run()
	return q
}

// Write queues a copy of p, or drops it when the queue is full. It never
// blocks and never fails.
func (q *stderrQueue) Write(p []byte) (int, error) {
	if q.queued.Load()+int64(len(p)) > queueBytes {
		q.drop()
		return len(p), nil
	}
	line := append([]byte(nil), p...)
	q.queued.Add(int64(len(line)))
	select {
	case q.lines <- line:
	default:
		q.queued.Add(-int64(len(line)))
		q.drop()
	}
	return len(p), nil
}

func (q *stderrQueue) drop() {
	q.dropped.Add(1)
	q.unsaid.Add(1)
}

// run writes the queued lines, and on a flush request every line queued
// before it, then answers.
func (q *stderrQueue) run() {
	for {
		select {
		case line := <-q.lines:
			q.write(line)
		case done := <-q.flushes:
			for more := true; more; {
				select {
				case line := <-q.lines:
					q.write(line)
				default:
					more = false
				}
			}
			close(done)
		}
	}
}

func (q *stderrQueue) write(line []byte) {
	q.queued.Add(-int64(len(line)))
	if n := q.unsaid.Swap(0); n > 0 {
		prefix := ""
		if q.journal {
			prefix = "<4>"
		}
		fmt.Fprintf(q.w, "%srhi: %d log lines not written to stderr: it was not being read (they are in the log files)\n", prefix, n)
	}
	q.w.Write(line) //nolint:errcheck // nowhere to report a failing stderr
}

// Flush waits until the lines queued so far are written, at most
// closeWait: a stderr nobody reads must not stop rhi from exiting.
func (q *stderrQueue) Flush() {
	t := time.NewTimer(closeWait)
	defer t.Stop()
	done := make(chan struct{})
	select {
	case q.flushes <- done:
	case <-t.C:
		return
	}
	select {
	case <-done:
	case <-t.C:
	}
}
