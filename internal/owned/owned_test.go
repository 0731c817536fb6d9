package owned

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rhi-daemon/rhi/internal/safefile"
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := Record{Iface: "rhi0", VIPs: prefixes("10.0.0.102/32", "2001:db8::1/128", "10.0.0.100/32", "10.0.0.102/32")}
	data := Encode(in)
	want := header + "interface rhi0\n10.0.0.100/32\n10.0.0.102/32\n2001:db8::1/128\n"
	if string(data) != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", data, want)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Iface != "rhi0" || !slices.Equal(got.VIPs, prefixes("10.0.0.100/32", "10.0.0.102/32", "2001:db8::1/128")) {
		t.Fatalf("Decode = %+v", got)
	}
}

func TestDecodeEmptyRecord(t *testing.T) {
	got, err := Decode(Encode(Record{Iface: "rhi0"}))
	if err != nil || got.Iface != "rhi0" || len(got.VIPs) != 0 {
		t.Fatalf("Decode(empty record) = %+v, %v", got, err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty file", "", "no interface line"},
		{"only comments", "# x\n\n", "no interface line"},
		{"interface without name", "interface \n", `line 1: want "interface NAME" (got "interface")`},
		{"interface with two names", "interface a b\n", `line 1: want "interface NAME" (got "interface a b")`},
		{"vip before interface", "10.0.0.1/32\ninterface rhi0\n", `line 1: "10.0.0.1/32" before the interface line`},
		{"two interfaces", "interface rhi0\ninterface rhi1\n", "line 2: second interface line"},
		{"network", "interface rhi0\n10.0.0.0/24\n", `line 2: not a /32 or /128 host prefix (got "10.0.0.0/24")`},
		{"bare address", "interface rhi0\n10.0.0.1\n", `line 2: not a /32 or /128 host prefix (got "10.0.0.1")`},
		{"4in6", "interface rhi0\n::ffff:10.0.0.1/128\n", `line 2: not a /32 or /128 host prefix (got "::ffff:10.0.0.1/128")`},
		{"garbage", "interface rhi0\n# ok\n\nhello\n", `line 4: not a /32 or /128 host prefix (got "hello")`},
		{"endless line", "interface rhi0\n" + strings.Repeat("1", 5000) + "\n", "line 2: bufio.Scanner: token too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Decode = %+v, %v; want error %q", got, err, tt.want)
			}
		})
	}
}

func TestWriteThenRead(t *testing.T) {
	dir := t.TempDir()
	f := File(filepath.Join(dir, "state", "owned")) // the directory is created
	want := Record{Iface: "rhi0", VIPs: prefixes("10.0.0.100/32", "fd00::1/128")}
	if err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f.String())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != Mode {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), fs.FileMode(Mode))
	}
	got, err := f.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got.Iface != want.Iface || !slices.Equal(got.VIPs, want.VIPs) {
		t.Fatalf("Read = %+v, want %+v", got, want)
	}
	// Shrinking replaces it whole.
	if err := f.Write(Record{Iface: "rhi0", VIPs: prefixes("fd00::1/128")}); err != nil {
		t.Fatal(err)
	}
	got, err = f.Read()
	if err != nil || !slices.Equal(got.VIPs, prefixes("fd00::1/128")) {
		t.Fatalf("after shrinking: %+v, %v", got, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "state", ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestReadMissing(t *testing.T) {
	_, err := File(filepath.Join(t.TempDir(), "owned")).Read()
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, Encode(Record{Iface: "rhi0", VIPs: prefixes("10.0.0.1/32")}), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, fifo, dir} {
		if _, err := File(path).Read(); !errors.Is(err, safefile.ErrNotRegular) {
			t.Errorf("Read(%s) = %v, want ErrNotRegular", path, err)
		}
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(big).Read(); !errors.Is(err, safefile.ErrTooLarge) {
		t.Errorf("Read(big) = %v, want ErrTooLarge", err)
	}
}

func TestWriteReplacesALinkWithoutFollowingIt(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "owned")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := File(path).Write(Record{Iface: "rhi0"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("record is not a regular file after Write: %v, %v", fi, err)
	}
}

// BenchmarkWrite10000 is one rewrite of a record of 10,000 VIPs (encode,
// temporary file, fsync, rename): what a reload or start-up pays, never a
// steady tick.
func BenchmarkWrite10000(b *testing.B) {
	r := Record{Iface: "rhi0"}
	for i := range 10000 {
		r.VIPs = append(r.VIPs, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 32))
	}
	f := File(filepath.Join(b.TempDir(), "owned"))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead10000 reads that record back, as a start-up does.
func BenchmarkRead10000(b *testing.B) {
	r := Record{Iface: "rhi0"}
	for i := range 10000 {
		r.VIPs = append(r.VIPs, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 32))
	}
	f := File(filepath.Join(b.TempDir(), "owned"))
	if err := f.Write(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecode checks Decode's contract on arbitrary input: it never panics;
// a record it accepts has an interface and sorted, unique host prefixes,
// and survives a round trip through Encode.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Record{Iface: "rhi0", VIPs: prefixes("10.0.0.100/32", "2001:db8::1/128")}))
	f.Add([]byte("interface rhi0\n# c\n\n10.0.0.1/32\n10.0.0.1/32\n"))
	f.Add([]byte("interface\n10.0.0.0/24\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		if r.Iface == "" {
			t.Fatalf("accepted without an interface: %q", data)
		}
		for i, p := range r.VIPs {
			if p.Bits() != p.Addr().BitLen() || p.Addr().Is4In6() {
				t.Fatalf("accepted %s", p)
			}
			if i > 0 && r.VIPs[i-1].Compare(p) >= 0 {
				t.Fatalf("not sorted and unique: %v", r.VIPs)
			}
		}
		back, err := Decode(Encode(r))
		if err != nil || back.Iface != r.Iface || !slices.Equal(back.VIPs, r.VIPs) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, r)
		}
	})
}

func TestReadOnlyReadsAndNeverWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owned")
	if err := ReadOnly(path).Write(Record{Iface: "rhi0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadOnly wrote %s: %v", path, err)
	}
	if err := File(path).Write(Record{Iface: "rhi0", VIPs: prefixes("10.0.0.1/32")}); err != nil {
		t.Fatal(err)
	}
	r, err := ReadOnly(path).Read()
	if err != nil || !slices.Equal(r.VIPs, prefixes("10.0.0.1/32")) {
		t.Fatalf("ReadOnly.Read = %+v, %v", r, err)
	}
}
