// Package safefile opens and replaces the small files rhi shares with other
// users (the drain file, the ownership record, the config) without trusting
// them: the last path element is never followed if it is a symbolic link,
// the open never blocks (a FIFO or a device is refused, not waited on), only
// regular files are read, and a read is bounded in size.
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

// WriteAtomic replaces path with data: a new temporary file in the same
// directory (never an existing one, so a planted link is not followed),
// given mode perm, passed to prepare (if not nil, e.g. to chown it), synced,
// then renamed over path. A symbolic link at path is replaced, not followed.
func WriteAtomic(path string, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := fill(tmp, data, perm, prepare); err != nil {
		tmp.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself survives a crash; best effort
		d.Close()
	}
	return nil
}

func fill(f *os.File, data []byte, perm fs.FileMode, prepare func(*os.File) error) error {
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
	return f.Sync()
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
