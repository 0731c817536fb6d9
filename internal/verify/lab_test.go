//go:build integration

package verify_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/internal/router"
	"github.com/rhi-daemon/rhi/internal/verify"
)

// TestTierExportRealBird checks the tier of a VIP's export against a real
// BIRD (the one PATH finds: BIRD 2, or BIRD 3 under make integration-bird3)
// running the shipped tiers.conf with an Established session to the lab's
// router. With the VIP on rhi1 BIRD exports it degraded: Check accepts it
// as degraded and rejects it as announced. With the VIP on rhi0 only it is
// the reverse. Each verdict is awaited (BIRD takes the address change in
// within its scan time), then the opposite tier is asked of the same state.
func TestTierExportRealBird(t *testing.T) {
	l := lab.ForTest(t, lab.Options{Prefix: "rhivfy-", DCs: 1})
	d := l.DCs[0]
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) {
		t.Helper()
		if _, err := d.Run(ctx, "ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	run("link", "add", birdconf.DegradedInterface, "type", "ifb")
	run("link", "set", birdconf.DegradedInterface, "up")
	if err := useTiers(ctx, d); err != nil {
		t.Fatal(err)
	}
	version, err := d.Birdc(ctx, "show status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", firstLine(version))

	vip := netip.MustParsePrefix("10.255.0.10/32")
	sock := verify.Socket{Path: d.BirdSocket}
	check := func(tier string) router.Report {
		return sock.Check(ctx, router.Input{
			VIPs:            []router.VIP{{Prefix: vip, Expected: router.Present, OnInterface: true, Tier: tier}},
			Protocols:       d.Protocols,
			ExchangeTimeout: 5 * time.Second,
		})
	}
	// agrees waits until Check with tier finds every session Established
	// and the VIP exported as tier.
	agrees := func(tier string) {
		t.Helper()
		var last router.Report
		err := lab.Eventually(ctx, time.Minute, 200*time.Millisecond, func(context.Context) error {
			last = check(tier)
			if last.ExitCode() != router.ExitConsistent {
				return fmt.Errorf("exit %d: %s", last.ExitCode(), last.Summary())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("VIP on the interface of tier %s: never consistent: %v", tier, err)
		}
		t.Logf("as %s: %s", tier, last.Summary())
	}
	// rejects checks that Check with tier, on the state agrees saw, is a
	// mismatch naming the tier exported and the one wanted.
	rejects := func(tier, exported string) {
		t.Helper()
		r := check(tier)
		want := "as " + exported + ", want " + tier
		if r.Err != nil || r.ExitCode() != router.ExitMismatch || len(r.VIPs) != 1 || !strings.Contains(r.VIPs[0].Problem, want) {
			t.Errorf("exported %s, checked as %s: exit %d, err %v, %+v; want exit %d with %q", exported, tier, r.ExitCode(), r.Err, r.VIPs, router.ExitMismatch, want)
			return
		}
		t.Logf("as %s: %s", tier, r.VIPs[0].Problem)
	}

	run("addr", "add", vip.String(), "dev", birdconf.DegradedInterface)
	agrees(router.TierDegraded)
	rejects(router.TierFull, router.TierDegraded)

	run("addr", "add", vip.String(), "dev", d.Iface)
	run("addr", "del", vip.String(), "dev", birdconf.DegradedInterface)
	agrees(router.TierFull)
	rejects(router.TierDegraded, router.TierFull)
}

// useTiers rewrites d's host file to include tiers.conf, after its
// defines, instead of adc.conf, and reconfigures BIRD.
func useTiers(ctx context.Context, d *lab.DC) error {
	tiers := filepath.Join(d.Dir, "tiers.conf")
	if err := os.WriteFile(tiers, []byte(birdconf.Tiers()), 0o644); err != nil {
		return err
	}
	host, err := os.ReadFile(d.BirdConfig)
	if err != nil {
		return err
	}
	lines := strings.Split(string(host), "\n")
	replaced := false
	for i, line := range lines {
		if strings.HasPrefix(line, "include ") && strings.HasSuffix(line, `/adc.conf";`) {
			lines[i], replaced = `include "`+tiers+`";`, true
		}
	}
	if !replaced {
		return fmt.Errorf("%s: no include of adc.conf", d.BirdConfig)
	}
	site, err := birdconf.SiteID(d.ADCAddr4)
	if err != nil {
		return err
	}
	def := birdconf.Defines{AS: d.ASN, SiteID: site, DegradedPrepend: 3, Guard4: "10.255.0.0/16{32,32}", Guard6: "fd00:255::/32{128,128}"}
	conf := def.String() + strings.Join(lines, "\n")
	if err := os.WriteFile(d.BirdConfig, []byte(conf), 0o644); err != nil {
		return err
	}
	reply, err := d.Birdc(ctx, "configure")
	if err != nil {
		return fmt.Errorf("%s: configure: %w", d.Name, err)
	}
	if !strings.Contains(reply, "Reconfigur") {
		return fmt.Errorf("%s: configure: %s", d.Name, reply)
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
