package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// logDirMode is the mode of a log directory `rhi run` creates, as the
// unit's LogsDirectoryMode gives /var/log/rhi.
const logDirMode = 0o750

// ensureLogDirs creates the directory of each log file named (key → path;
// an empty path is stderr) that does not exist yet, and returns those it
// created. Under systemd the unit's LogsDirectory= has made /var/log/rhi
// already; run by hand, rhi makes it rather than refuse to start.
// check-config does not look at the file system, so that a file can be
// checked on a host other than the one it is for.
func ensureLogDirs(logs [][2]string) ([]string, error) {
	var created []string
	for _, kv := range logs {
		if kv[1] == "" {
			continue
		}
		dir := filepath.Dir(kv[1])
		if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue // there, or unreadable: opening the file reports it
		}
		if err := os.MkdirAll(dir, logDirMode); err != nil {
			return created, fmt.Errorf("%s: create log directory %q: %w", kv[0], dir, err)
		}
		created = append(created, dir)
	}
	return created, nil
}
