// Package drain keeps the set of VIPs an operator has drained: withdrawn
// whatever their health, until undrained. The set lives in a small text
// file (drain_file) so that it survives restarts of rhi and of the host;
// `rhi drain` writes it, the daemon reads it. What `rhi drain` and
// `rhi undrain` do to the set is [Targets] and [Set.Apply].
//
// The format is one VIP per line (as in the config: "10.0.0.100" or
// "10.0.0.100/32") or the word "all"; blank lines and "#" comments are
// ignored. Writes replace the file atomically, so a reader never sees half
// of one.
package drain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/safefile"
)

// maxSize bounds what Read accepts: a line per VIP.
const maxSize = 4 << 20

// Set is a drain set.
type Set struct {
	All  bool
	VIPs map[netip.Prefix]bool
}

// Has reports whether p is drained.
func (s Set) Has(p netip.Prefix) bool { return s.All || s.VIPs[p] }

// Empty reports whether nothing is drained.
func (s Set) Empty() bool { return !s.All && len(s.VIPs) == 0 }

// ParsePrefix reads a VIP as the config writes it: an address, or a host
// prefix (/32, /128). It is health.ParseHostPrefix.
func ParsePrefix(s string) (netip.Prefix, error) { return health.ParseHostPrefix(s) }

// Read reads the drain file. A missing file is an empty set, not an error.
// Anything but a regular file (a symbolic link, a FIFO, a device) is an
// error at once, never waited on, and so is a file over 4 MiB.
func Read(path string) (Set, error) {
	data, _, err := safefile.Read(path, maxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Set{VIPs: map[netip.Prefix]bool{}}, nil
	}
	if err != nil {
		return Set{}, fmt.Errorf("drain file: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a drain set from data; name is used in errors.
func Parse(name string, data []byte) (Set, error) {
	s := Set{VIPs: map[netip.Prefix]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSize)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		switch text {
		case "":
			continue
		case "all":
			s.All = true
			continue
		}
		p, err := ParsePrefix(text)
		if err != nil {
			return Set{}, fmt.Errorf("%s:%d: not a VIP or \"all\" (got %q)", name, line, text)
		}
		s.VIPs[p] = true
	}
	if err := sc.Err(); err != nil {
		return Set{}, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// Format writes s in the file format, sorted, with a header.
func Format(s Set) []byte {
	var b bytes.Buffer
	b.WriteString("# VIPs drained by `rhi drain`: withdrawn whatever their health. Undrain with `rhi undrain`.\n")
	if s.All {
		b.WriteString("all\n")
	}
	ps := make([]netip.Prefix, 0, len(s.VIPs))
	for p, on := range s.VIPs {
		if on {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, netip.Prefix.Compare)
	for _, p := range ps {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// fileMode is the drain file's mode. The list is not secret; who may change
// it is decided by the permissions of its directory.
const fileMode = 0o644

// Write replaces the drain file with s atomically and durably
// (safefile.WriteAtomic: a temporary file in the same directory, synced,
// renamed over it, the directory synced), so that a drain `rhi drain`
// reports recorded survives a power cut.
//
// The file is made readable by the daemon whoever writes it: mode 0644 and,
// when the writer is root (`sudo rhi drain`), the owner and group of the
// directory. Root's own file in the daemon's StateDirectory would otherwise
// be one the daemon, which runs as its own user without CAP_DAC_OVERRIDE,
// cannot open.
func Write(path string, s Set) error {
	dir := filepath.Dir(path)
	if err := safefile.WriteAtomic(path, Format(s), fileMode, func(f *os.File) error { return chownToDir(f, dir) }); err != nil {
		return fmt.Errorf("write drain file %q: %w", path, err)
	}
	return nil
}

// chownToDir gives f the owner and group of dir when this process is root,
// and does nothing otherwise.
func chownToDir(f *os.File, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return f.Chown(int(st.Uid), int(st.Gid))
	}
	return nil
}
