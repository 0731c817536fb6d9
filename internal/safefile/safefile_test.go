package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
