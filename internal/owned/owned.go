// Package owned reads and writes rhi's ownership record (config state_file):
// the VIPs rhi owns on its interface, those it may have put there. It
// survives restarts, so that rhi can tell an address it put on the
// interface under a previous configuration, and must withdraw, from one it
// never managed.
//
// The record is a small text file that rhi alone writes:
//
//	# rhi ownership record: the VIPs rhi owns on the interface. Written by rhi; do not edit.
//	interface rhi0
//	10.0.0.100/32
//	2001:db8::1/128
//
// Lines starting with '#' and blank lines are ignored. It is read through
// safefile (no link followed, no FIFO waited on, bounded) and replaced
// atomically, so that a reader sees the old record or the new one, never a
// part of either.
package owned

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

// MaxSize bounds what Read accepts: some 200,000 IPv6 VIPs.
const MaxSize = 8 << 20

// Mode is the record's permission: the daemon writes it, and `rhi verify`
// or a monitoring user may read it.
const Mode = 0o644

const header = "# rhi ownership record: the VIPs rhi owns on the interface. Written by rhi; do not edit.\n"

// Record is the content of an ownership record.
type Record struct {
	// Iface is the interface the VIPs are on: a record of another
	// interface says nothing about this one.
	Iface string
	// VIPs are the host prefixes (/32, /128) rhi owns, sorted, unique.
	VIPs []netip.Prefix
}

// Encode formats r as the file holds it; the VIPs are written sorted and
// once each, whatever their order in r.
func Encode(r Record) []byte {
	vips := slices.Clone(r.VIPs)
	slices.SortFunc(vips, netip.Prefix.Compare)
	vips = slices.Compact(vips)
	b := make([]byte, 0, len(header)+32+24*len(vips))
	b = append(b, header...)
	b = append(b, "interface "+r.Iface+"\n"...)
	for _, p := range vips {
		b, _ = p.AppendText(b) // never fails
		b = append(b, '\n')
	}
	return b
}

// Decode reads a record. Any line it does not understand fails the whole
// record, naming the line: a record is only worth acting on whole.
func Decode(data []byte) (Record, error) {
	var r Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 256), 4096)
	n, seenIface := 0, false
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == "interface" || strings.HasPrefix(line, "interface "):
			f := strings.Fields(line)
			switch {
			case seenIface:
				return Record{}, fmt.Errorf("line %d: second interface line", n)
			case len(f) != 2:
				return Record{}, fmt.Errorf("line %d: want \"interface NAME\" (got %q)", n, line)
			}
			seenIface = true
			r.Iface = f[1]
			continue
		case !seenIface:
			return Record{}, fmt.Errorf("line %d: %q before the interface line", n, line)
		}
		p, err := netip.ParsePrefix(line)
		if err != nil || p.Bits() != p.Addr().BitLen() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			return Record{}, fmt.Errorf("line %d: not a /32 or /128 host prefix (got %q)", n, line)
		}
		r.VIPs = append(r.VIPs, p)
	}
	if err := sc.Err(); err != nil {
		return Record{}, fmt.Errorf("line %d: %w", n+1, err)
	}
	if !seenIface {
		return Record{}, errors.New("no interface line")
	}
	slices.SortFunc(r.VIPs, netip.Prefix.Compare)
	r.VIPs = slices.Compact(r.VIPs)
	return r, nil
}

// File is an ownership record at a path (config state_file).
type File string

func (f File) String() string { return string(f) }

// Read reads and decodes the record. A missing file is an error that
// matches fs.ErrNotExist; a link, a FIFO, anything but a regular file, or a
// file over MaxSize is refused (safefile), and so is a record owned by
// neither root nor this process's user.
func (f File) Read() (Record, error) {
	data, fi, err := safefile.Read(string(f), MaxSize)
	if err != nil {
		return Record{}, fmt.Errorf("read ownership record: %w", err)
	}
	// The record is an order to delete addresses: one planted by another
	// user (state_file in a directory others can write to) is not rhi's.
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || (st.Uid != 0 && int(st.Uid) != os.Geteuid()) {
		owner := "unknown"
		if ok {
			owner = fmt.Sprint(st.Uid)
		}
		return Record{}, fmt.Errorf("read ownership record %q: owned by uid %s, neither root nor this process's user (uid %d): not written by rhi; refused", string(f), owner, os.Geteuid())
	}
	r, err := Decode(data)
	if err != nil {
		return Record{}, fmt.Errorf("read ownership record %q: %w", string(f), err)
	}
	return r, nil
}

// Write replaces the record with r, atomically, creating its directory if
// it is missing.
func (f File) Write(r Record) error {
	path := string(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write ownership record: %w", err)
	}
	if err := safefile.WriteAtomic(path, Encode(r), Mode, nil); err != nil {
		return fmt.Errorf("write ownership record: %w", err)
	}
	return nil
}

// ReadOnly is the record at a path for a dry run: read as File reads it,
// never written, so that a dry run shows what a restart would withdraw
// and changes nothing.
type ReadOnly string

func (f ReadOnly) String() string { return string(f) }

// Read is File.Read.
func (f ReadOnly) Read() (Record, error) { return File(f).Read() }

// Write does nothing.
func (f ReadOnly) Write(Record) error { return nil }
