// Package logfile routes rhi's log to its two files and to stderr: main_log
// takes every line (info and up, debug with --debug), error_log warnings and
// up, and stderr every line too, so that under systemd the journal
// gets them whatever the files are (with syslog priority prefixes). Files
// are reopened on SIGUSR1 so logrotate can move them away.
package logfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/sirupsen/logrus"
)

// File is an append-only log file that can be reopened at the same path. It
// is safe for concurrent use.
type File struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// Open opens path for appending, creating it (mode 0640) if needed.
func Open(path string) (*File, error) {
	f := &File{path: path}
	if err := f.Reopen(); err != nil {
		return nil, err
	}
	return f, nil
}

// Write appends p to the current file.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Write(p)
}

// Reopen opens the path anew and closes the old file. On failure the old
// file stays in use, so no line is lost to a bad rotation.
func (f *File) Reopen() error {
	nf, err := openAppend(f.path)
	if err != nil {
		return fmt.Errorf("open log %q: %w", f.path, err)
	}
	f.mu.Lock()
	old := f.f
	f.f = nf
	f.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// openAppend opens path for appending, creating it (mode 0640) if needed,
// as a regular file only: a symbolic link there is not followed and a FIFO
// or device is refused without waiting for a reader (the log directory is
// the daemon user's, so anything in it may have been planted).
func openAppend(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o640)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("a symbolic link: not followed")
	}
	if errors.Is(err, syscall.ENXIO) {
		return nil, errors.New("a FIFO or socket without a reader: not a regular file")
	}
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, fmt.Errorf("not a regular file (mode %#o)", st.Mode)
	}
	// Blocking again, as a regular file always is; writes keep O_APPEND.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Close closes the file.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f.Close()
}

// Logs is the logger and the destinations it writes to.
type Logs struct {
	Logger *logrus.Logger
	files  []*File
	stderr *stderrQueue // nil without Options.Stderr
}

// Options says where and how rhi logs.
type Options struct {
	// MainPath gets every line the logger lets through; ErrorPath warnings
	// and up. "" means no file. The same path for both writes a line once.
	MainPath, ErrorPath string
	Debug               bool   // let debug lines through
	Format              string // "text" (or "") or "json"
	// Stderr gets every line, whatever the files: under systemd it is the
	// journal, where warnings and errors must always arrive.
	Stderr io.Writer
	// Journal prefixes each stderr line with its syslog priority ("<4>"),
	// which journald strips and records (see StderrIsJournal).
	Journal bool
}

// New builds a logger that writes to the files of o and to o.Stderr.
func New(o Options) (*Logs, error) {
	f, err := formatter(o.Format)
	if err != nil {
		return nil, err
	}
	l := &Logs{Logger: logrus.New()}
	// The hook writes every line; the logger's own output formats nothing.
	l.Logger.Out = io.Discard
	l.Logger.Formatter = discard{}
	l.Logger.Level = logrus.InfoLevel
	if o.Debug {
		l.Logger.Level = logrus.DebugLevel
	}
	h := &fanout{fmt: f}
	if o.Stderr != nil {
		l.stderr = newStderrQueue(o.Stderr, o.Journal)
		h.sinks = append(h.sinks, sink{w: l.stderr, max: logrus.TraceLevel, journal: o.Journal})
	}
	for _, dst := range []struct {
		path string
		max  logrus.Level
	}{{o.MainPath, logrus.TraceLevel}, {o.ErrorPath, logrus.WarnLevel}} {
		if dst.path == "" || (dst.max == logrus.WarnLevel && dst.path == o.MainPath) {
			continue // no file, or the main log already has every line
		}
		file, err := Open(dst.path)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.files = append(l.files, file)
		h.sinks = append(h.sinks, sink{w: file, max: dst.max})
	}
	l.Logger.AddHook(h)
	return l, nil
}

// Reopen reopens every log file (SIGUSR1).
func (l *Logs) Reopen() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Reopen())
	}
	return errors.Join(errs...)
}

// StderrDropped counts the lines that stderr could not take (it was not
// being read, and the queue in front of it was full), ever: for a metric.
func (l *Logs) StderrDropped() uint64 {
	if l.stderr == nil {
		return 0
	}
	return l.stderr.dropped.Load()
}

// Flush waits until the lines logged so far have reached stderr, for a
// bounded time (see stderrQueue).
func (l *Logs) Flush() {
	if l.stderr != nil {
		l.stderr.Flush()
	}
}

// Close writes the lines still queued for stderr (waiting a bounded time)
// and closes every log file. Lines logged after it still reach stderr.
func (l *Logs) Close() error {
	l.Flush()
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
