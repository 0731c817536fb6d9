package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want error
	}{
		{"symlink", link, ErrNotRegular},
		{"fifo", fifo, ErrNotRegular}, // must not block: a FIFO with no writer
		{"directory", dir, ErrNotRegular},
		{"too large", big, ErrTooLarge},
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Read(tc.path, 64)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Read(%s) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
	data, fi, err := Read(target, 64)
	if err != nil || string(data) != "secret\n" || fi.Size() != 7 {
		t.Fatalf("Read(regular) = %q, %v, %v", data, fi, err)
	}
}

func TestWriteAtomicReplacesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "drain")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	called := false
	if err := WriteAtomic(path, []byte("new\n"), 0o644, func(*os.File) error { called = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	data, fi, err := Read(path, 64)
	if err != nil || string(data) != "new\n" || fi.Mode().Perm() != 0o644 || !called {
		t.Fatalf("after WriteAtomic: %q %v %v prepare called %v", data, fi, err, called)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".drain-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// recording is osOps that records each call, and fails the one named in
// fail.
type recording struct {
	calls []string
	fail  string
}

func (r *recording) note(call string) error {
	r.calls = append(r.calls, call)
	if call == r.fail {
		return errors.New("injected failure of " + call)
	}
	return nil
}

func (r *recording) createTemp(dir, pattern string) (*os.File, error) {
	if err := r.note("createTemp"); err != nil {
		return nil, err
	}
	return osOps{}.createTemp(dir, pattern)
}

func (r *recording) syncFile(f *os.File) error {
	if err := r.note("syncFile"); err != nil {
		return err
	}
	return osOps{}.syncFile(f)
}

func (r *recording) rename(from, to string) error {
	if err := r.note("rename"); err != nil {
		return err
	}
	return osOps{}.rename(from, to)
}

func (r *recording) syncDir(dir string) error {
	if err := r.note("syncDir"); err != nil {
		return err
	}
	return osOps{}.syncDir(dir)
}

func (r *recording) remove(path string) error {
	r.calls = append(r.calls, "remove")
	return osOps{}.remove(path)
}

// TestWriteAtomicDurable checks the order that makes a replacement survive
// a power cut: the new file's data synced before the rename, and the
// directory synced after it (without that, the rename may be lost and the
// old contents come back).
func TestWriteAtomicDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	r := &recording{}
	if err := writeAtomic(r, path, []byte("all\n"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"createTemp", "syncFile", "rename", "syncDir"}
	if !slices.Equal(r.calls, want) {
		t.Fatalf("calls %v, want %v", r.calls, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "all\n" {
		t.Fatalf("file holds %q", b)
	}
}

// TestWriteAtomicReports checks that each failure is returned, the
// directory's fsync included (the contents are in place, but the caller
// must not call them durable), and that a temporary file is removed when
// the rename did not happen.
func TestWriteAtomicReports(t *testing.T) {
	for _, step := range []string{"createTemp", "syncFile", "rename", "syncDir"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			r := &recording{fail: step}
			err := writeAtomic(r, filepath.Join(dir, "drain"), []byte("all\n"), 0o644, nil)
			if err == nil || !strings.Contains(err.Error(), "injected failure of "+step) {
				t.Fatalf("error %v, want the injected failure of %s", err, step)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".drain-*"))
			if len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

func TestSyncDirRefusesFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (osOps{}).syncDir(f); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("syncDir(file) = %v, want ENOTDIR", err)
	}
}
