// Package safefile opens and replaces the small files rhi shares with other
// users (the drain file, the ownership record, the config) without trusting
// them: the last path element is never followed if it is a symbolic link,
// the open never blocks (a FIFO or a device is refused, not waited on), only
// regular files are read, and a read is bounded in size. WriteAtomic is the
// one writer of every file rhi and its CLI keep across restarts: the new
// contents reach the disk before the rename, and the rename before it
// returns.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is returned for a path that names something other than a
// regular file (a FIFO, a socket, a device, a directory, or a symbolic link).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than the caller's bound.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading without following a symbolic link in its last
// element and without blocking, and checks that it is a regular file. A
// missing file is reported as an error that matches fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			// O_NOFOLLOW on a symbolic link.
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (a symbolic link)", ErrNotRegular)}
		}
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	return f, fi, nil
}

// Read returns the contents of the regular file at path, at most max bytes,
// and its FileInfo as seen by the open descriptor. See Open.
func Read(path string, max int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%d bytes, the limit is %d)", ErrTooLarge, fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > max {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (over %d bytes)", ErrTooLarge, max)}
	}
	return data, fi, nil
}

// WriteAtomic replaces path with data durably: a new temporary file in
// the same directory (never an existing one, so a planted link is not
// followed), given mode perm, passed to prepare (if not nil, e.g. to chown
// it), written and fsynced, renamed over path, and then the directory
// fsynced, so that the rename itself survives a power cut. A symbolic link
// at path is replaced, not followed. An error from the directory's fsync is
// returned: the new contents are in place but may not survive a crash, and
// the caller (`rhi drain`, which tells the operator the drain is recorded)
// must not say otherwise.
func WriteAtomic(path string, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	return osOps{}.writeAtomic(path, data, perm, prepare)
}

// ops are the filesystem calls WriteAtomic makes, so that a test can
// record them and check their order (the directory fsynced after the
// rename); osOps makes them.
type ops interface {
	createTemp(dir, pattern string) (*os.File, error)
	syncFile(f *os.File) error
	rename(from, to string) error
	syncDir(dir string) error
	remove(path string) error
}

func (o osOps) writeAtomic(path string, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	return writeAtomic(o, path, data, perm, prepare)
}

func writeAtomic(o ops, path string, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := o.createTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			o.remove(tmp.Name())
		}
	}()
	if err := fill(o, tmp, data, perm, prepare); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := o.rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	if err := o.syncDir(dir); err != nil {
		return fmt.Errorf("write %q: written, but its directory could not be synced (the change may not survive a crash): %w", path, err)
	}
	return nil
}

func fill(o ops, f *os.File, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(f); err != nil {
			return err
		}
	}
	return o.syncFile(f)
}

// osOps are the real calls.
type osOps struct{}

func (osOps) createTemp(dir, pattern string) (*os.File, error) { return os.CreateTemp(dir, pattern) }
func (osOps) syncFile(f *os.File) error                        { return f.Sync() }
func (osOps) rename(from, to string) error                     { return os.Rename(from, to) }
func (osOps) remove(path string) error                         { return os.Remove(path) }

// syncDir fsyncs the directory dir: it is opened read-only as a directory
// (O_DIRECTORY: anything else is refused) and without blocking. A link
// to a directory is followed, as the rename followed it: systemd's
// StateDirectory= with DynamicUser= is such a link.
func (osOps) syncDir(dir string) error {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := os.NewFile(uintptr(fd), dir)
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
