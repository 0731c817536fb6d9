// Package logfile routes rhi's log to its two files: main_log takes info and
// up, error_log warnings and up (SPEC §2). Files are reopened on SIGUSR1 so
// logrotate can move them away.
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

// Logs is the pair of destinations and the logger that writes to them.
type Logs struct {
	Logger *logrus.Logger
	files  []*File
}

// New builds a logger for mainPath and errorPath; an empty path means stderr.
// main gets every level the logger lets through (info and up, or debug with
// debug set); error gets warnings and up. When both are stderr a line is
// written once.
func New(mainPath, errorPath string, debug bool, stderr io.Writer) (*Logs, error) {
	l := &Logs{Logger: logrus.New()}
	l.Logger.Out = io.Discard
	l.Logger.Formatter = &logrus.TextFormatter{FullTimestamp: true, DisableColors: true}
	l.Logger.Level = logrus.InfoLevel
	if debug {
		l.Logger.Level = logrus.DebugLevel
	}
	open := func(path string) (io.Writer, error) {
		if path == "" {
			return stderr, nil
		}
		f, err := Open(path)
		if err != nil {
			return nil, err
		}
		l.files = append(l.files, f)
		return f, nil
	}
	mainW, err := open(mainPath)
	if err != nil {
		return nil, err
	}
	l.Logger.AddHook(&hook{w: mainW, levels: logrus.AllLevels, fmt: l.Logger.Formatter})
	if mainPath == "" && errorPath == "" {
		return l, nil
	}
	errW, err := open(errorPath)
	if err != nil {
		l.Close()
		return nil, err
	}
	if mainPath == errorPath {
		return l, nil // one file: every line once
	}
	l.Logger.AddHook(&hook{w: errW, levels: []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}, fmt: l.Logger.Formatter})
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

// Close closes every log file.
func (l *Logs) Close() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

type hook struct {
	w      io.Writer
	levels []logrus.Level
	fmt    logrus.Formatter
}

func (h *hook) Levels() []logrus.Level { return h.levels }

func (h *hook) Fire(e *logrus.Entry) error {
	b, err := h.fmt.Format(e)
	if err != nil {
		return err
	}
	_, err = h.w.Write(b)
	return err
}
