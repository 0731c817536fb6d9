package drain

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func set(all bool, vips ...string) Set {
	s := Set{All: all, VIPs: map[netip.Prefix]bool{}}
	for _, v := range vips {
		s.VIPs[netip.MustParsePrefix(v)] = true
	}
	return s
}

var cmpSet = cmpopts.EquateComparable(netip.Prefix{})

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Set
		err  string
	}{
		{"empty", "", set(false), ""},
		{"comments and blanks", "# header\n\n  # x\n", set(false), ""},
		{"addresses and prefixes", "10.0.0.100\n10.0.0.101/32 # maintenance\nfd00::1\n", set(false, "10.0.0.100/32", "10.0.0.101/32", "fd00::1/128"), ""},
		{"all", "all\n10.0.0.1\n", set(true, "10.0.0.1/32"), ""},
		{"garbage", "10.0.0.1\nbanana\n", Set{}, `drain:2: not a VIP or "all" (got "banana")`},
		{"non-host prefix", "10.0.0.0/24\n", Set{}, `drain:1: not a VIP or "all" (got "10.0.0.0/24")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("drain", []byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpSet); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drain")
	if s, err := Read(path); err != nil || !s.Empty() {
		t.Fatalf("missing file: %+v, %v; want empty, nil", s, err)
	}
	want := set(true, "10.0.0.2/32", "10.0.0.1/32", "fd00::1/128")
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpSet); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "all\n10.0.0.1/32\n10.0.0.2/32\nfd00::1/128\n") {
		t.Errorf("file not sorted:\n%s", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of the drain file: %v, %v; want 0644 (not secret; the directory guards it)", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if !got.Has(netip.MustParsePrefix("192.0.2.9/32")) {
		t.Error("all does not drain every VIP")
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := Read(t.TempDir()); err == nil {
		t.Error("reading a directory succeeded")
	}
	if err := Write("/nonexistent-dir/drain", set(false)); err == nil || !strings.Contains(err.Error(), "drain file") {
		t.Errorf("write into a missing dir: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("all\n10.0.0.1\n# c\nfd00::1/128\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f", data)
		if err != nil {
			return
		}
		back, err := Parse("f", Format(s))
		if err != nil {
			t.Fatalf("formatted set does not parse: %v", err)
		}
		if diff := cmp.Diff(s, back, cmpSet); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
