package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnsureLogDirs: a missing log directory is created with mode 0750 and
// reported; one that exists is left alone; one that cannot be made is an
// error naming the key and the directory.
func TestEnsureLogDirs(t *testing.T) {
	root := t.TempDir()
	main := filepath.Join(root, "new", "rhi", "main.log")
	errLog := filepath.Join(root, "error.log")
	created, err := ensureLogDirs([][2]string{{"main_log", main}, {"error_log", errLog}, {"error_log", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Dir(main)}; !slices.Equal(created, want) {
		t.Errorf("created %v, want %v", created, want)
	}
	fi, err := os.Stat(filepath.Dir(main))
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&^0o750 != 0 {
		t.Errorf("log directory: %v, %v; want a directory with no more than mode 0750", fi, err)
	}
	if created, err := ensureLogDirs([][2]string{{"main_log", main}}); err != nil || len(created) != 0 {
		t.Errorf("second call: created %v, %v; want nothing", created, err)
	}
	dangling := filepath.Join(root, "dangling") // a link to nowhere cannot become a directory
	if err := os.Symlink(filepath.Join(root, "nowhere", "deeper"), dangling); err != nil {
		t.Fatal(err)
	}
	_, err = ensureLogDirs([][2]string{{"error_log", filepath.Join(dangling, "sub", "error.log")}})
	if err == nil || !strings.Contains(err.Error(), `error_log: create log directory "`+filepath.Join(dangling, "sub")+`"`) {
		t.Errorf("under a dangling link: %v; want an error naming error_log and the directory", err)
	}
}
