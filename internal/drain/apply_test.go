package drain

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// configured is the VIPs of the configuration in these tests.
var configured = prefixes("10.0.0.100/32", "10.0.0.101/32", "fd00::1/128")

func TestApply(t *testing.T) {
	var (
		drainSome   = Op{Drain: true}
		drainAll    = Op{Drain: true, All: true}
		undrainSome = Op{}
		undrainAll  = Op{All: true}
	)
	tests := []struct {
		name    string
		from    Set
		op      Op
		targets []netip.Prefix
		want    Set
	}{
		{"drain one into an empty set", set(false), drainSome, prefixes("10.0.0.101/32"), set(false, "10.0.0.101/32")},
		{"drain adds to what is drained", set(false, "10.0.0.101/32"), drainSome, prefixes("fd00::1/128"), set(false, "10.0.0.101/32", "fd00::1/128")},
		{"drain what is drained already", set(false, "10.0.0.101/32"), drainSome, prefixes("10.0.0.101/32"), set(false, "10.0.0.101/32")},
		{"drain one while all are drained", set(true), drainSome, prefixes("10.0.0.100/32"), set(true, "10.0.0.100/32")},
		{"undrain one", set(false, "10.0.0.101/32", "fd00::1/128"), undrainSome, prefixes("10.0.0.101/32"), set(false, "fd00::1/128")},
		{"undrain what is not drained", set(false, "fd00::1/128"), undrainSome, prefixes("10.0.0.100/32"), set(false, "fd00::1/128")},
		// --all keeps the VIPs listed: an undrain --all clears both.
		{"drain all keeps the list", set(false, "fd00::1/128"), drainAll, configured, set(true, "fd00::1/128")},
		// Undraining one VIP out of "all" keeps the others drained.
		{"undrain one out of all", set(true, "fd00::1/128"), undrainSome, prefixes("10.0.0.100/32"), set(false, "10.0.0.101/32", "fd00::1/128")},
		{"undrain two out of all", set(true), undrainSome, prefixes("10.0.0.100/32", "fd00::1/128"), set(false, "10.0.0.101/32")},
		{"undrain all", set(true, "10.0.0.101/32", "fd00::1/128"), undrainAll, configured, set(false)},
		// A VIP drained by an older configuration goes with --all too.
		{"undrain all clears unconfigured VIPs", set(false, "192.0.2.1/32"), undrainAll, configured, set(false)},
		{"undrain one keeps unconfigured VIPs", set(false, "192.0.2.1/32", "10.0.0.100/32"), undrainSome, prefixes("10.0.0.100/32"), set(false, "192.0.2.1/32")},
		{"a set read as zero", Set{}, drainSome, prefixes("10.0.0.100/32"), set(false, "10.0.0.100/32")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := Format(tt.from)
			got := tt.from.Apply(tt.op, tt.targets, configured)
			if diff := cmp.Diff(tt.want, got, cmpSet); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if after := Format(tt.from); string(after) != string(before) {
				t.Errorf("Apply changed its receiver:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		args []string
		want []netip.Prefix
		err  string
	}{
		{"addresses and host prefixes", Op{Drain: true}, []string{"10.0.0.101", "fd00::1/128"}, prefixes("10.0.0.101/32", "fd00::1/128"), ""},
		{"all is every configured VIP", Op{All: true}, nil, configured, ""},
		{"not a VIP of the configuration", Op{Drain: true}, []string{"10.0.0.100", "10.9.9.9"}, nil, `"10.9.9.9" is not a VIP`},
		{"not an address", Op{}, []string{"banana"}, nil, `"banana" is not a VIP`},
		{"not a host prefix", Op{}, []string{"10.0.0.100/24"}, nil, `"10.0.0.100/24" is not a VIP`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Targets(tt.op, tt.args, configured)
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
