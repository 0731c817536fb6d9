package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sirupsen/logrus"
)

// TimeFormat is the time of every line: RFC 3339 with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// formatter returns the formatter of log_format name: "text" (or "") for
// logfmt-like lines (time=… level=… msg=… key=value …), "json" for one
// object per line with the keys "time", "level", "msg" and each field under
// its own name (an error under "error").
func formatter(name string) (logrus.Formatter, error) {
	switch name {
	case "", "text":
		return &logrus.TextFormatter{FullTimestamp: true, TimestampFormat: TimeFormat, DisableColors: true}, nil
	case "json":
		return &logrus.JSONFormatter{TimestampFormat: TimeFormat}, nil
	}
	return nil, fmt.Errorf("log format %q: unknown (allowed: text, json)", name)
}

// priority is the syslog priority prefix journald reads off a line
// (sd-daemon(3)): <3> error, <4> warning, <6> info, <7> debug; panic and
// fatal are <2> (critical).
func priority(l logrus.Level) string {
	switch l {
	case logrus.PanicLevel, logrus.FatalLevel:
		return "<2>"
	case logrus.ErrorLevel:
		return "<3>"
	case logrus.WarnLevel:
		return "<4>"
	case logrus.InfoLevel:
		return "<6>"
	}
	return "<7>"
}

// StderrIsJournal tells whether f (the process's stderr) is the stream
// systemd connected to the journal: journalStream is $JOURNAL_STREAM,
// "DEVICE:INODE" of that stream, which must match f's (systemd.exec(5)).
// A stderr redirected elsewhere by the service keeps the variable but not
// the device and inode, and gets no prefixes.
func StderrIsJournal(journalStream string, f *os.File) bool {
	dev, ino, ok := strings.Cut(journalStream, ":")
	if !ok || f == nil {
		return false
	}
	d, err1 := strconv.ParseUint(dev, 10, 64)
	i, err2 := strconv.ParseUint(ino, 10, 64)
	fi, err3 := f.Stat()
	if err := errors.Join(err1, err2, err3); err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == d && uint64(st.Ino) == i
}

// fanout formats each entry once and writes it to every sink whose level
// lets it through. A sink that fails does not keep the others from their
// line: stderr still gets an error a full disk keeps out of the files.
type fanout struct {
	fmt   logrus.Formatter
	sinks []sink
}

type sink struct {
	w       io.Writer
	max     logrus.Level // the most verbose level written
	journal bool         // prefix the syslog priority
}

func (h *fanout) Levels() []logrus.Level { return logrus.AllLevels }

func (h *fanout) Fire(e *logrus.Entry) error {
	b, err := h.fmt.Format(e)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range h.sinks {
		if e.Level > s.max {
			continue
		}
		line := b
		if s.journal {
			line = append([]byte(priority(e.Level)), b...)
		}
		if _, err := s.w.Write(line); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// discard is the logger's own formatter: the hook has written the line.
type discard struct{}

func (discard) Format(*logrus.Entry) ([]byte, error) { return nil, nil }

// PriorityWriter gives every line written through it that carries no
// syslog priority prefix of its own the priority prio: wrapped around a
// stderr that is the journal, it makes the plain error lines of the CLI
// (a config that does not load, a bad flag) errors in the journal, while
// the logger's lines, prefixed already, pass unchanged. It is safe for
// concurrent use.
type PriorityWriter struct {
	mu   sync.Mutex
	w    io.Writer
	prio string
	mid  bool // the last write ended inside a line
}

// NewPriorityWriter returns a PriorityWriter that writes to w; prio is a
// prefix such as "<3>".
func NewPriorityWriter(w io.Writer, prio string) *PriorityWriter {
	return &PriorityWriter{w: w, prio: prio}
}

func (p *PriorityWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	out := make([]byte, 0, n+len(p.prio))
	for len(b) > 0 {
		if !p.mid && !hasPriority(b) {
			out = append(out, p.prio...)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b...)
			p.mid = true
			break
		}
		out = append(out, b[:i+1]...)
		b = b[i+1:]
		p.mid = false
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// hasPriority tells whether line starts with "<N>", N a syslog priority.
func hasPriority(line []byte) bool {
	return len(line) >= 3 && line[0] == '<' && line[1] >= '0' && line[1] <= '7' && line[2] == '>'
}
