//go:build integration

package readme

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"gopkg.in/yaml.v3"
)

// TestReadmeWalk runs the README's rhi.yaml (step 5) in the lab, as steps 6
// to 8 do on a host: a dry run that changes nothing, the start, and `rhi
// verify` exiting 0, with the lab's router getting the VIP. The file is
// used as written, except the paths that would be the host's own
// (main_log, error_log, bird.socket, and the control socket, drain file and
// ownership record it leaves at their defaults), which move into the lab
// host's directory; the control API URL, interface, status listener and
// BGP protocol must be the lab's as they are. RHI_README_RHI names the rhi
// binary to run (packaging/check-readme.sh passes the packaged one);
// without it the tree's rhi is built.
func TestReadmeWalk(t *testing.T) {
	b, err := os.ReadFile(Path)
	if err != nil {
		t.Fatal(err)
	}
	text, err := Block(b, "5.", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("README step 5: %v", err)
	}

	ctx := context.Background()
	l := lab.ForTest(t, lab.Options{Prefix: "rhi-readme-", DCs: 1})
	dc := l.DCs[0]
	bins, err := site.Build(ctx, "rhi-readme-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Remove() })
	if p := os.Getenv("RHI_README_RHI"); p != "" {
		bins.RHI = p
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(vctx, p, "version").Output()
		cancel()
		if err != nil {
			t.Fatalf("%s version: %v", p, err)
		}
		t.Logf("running %s: %s", p, strings.TrimSpace(string(out)))
	}

	// The VIPs and their upstreams, for the fake control API (every node
	// healthy).
	var vips []site.VIP
	var prefixes []netip.Prefix
	for _, v := range cfg["vips"].([]any) {
		m := v.(map[string]any)
		sv := site.VIP{Address: fmt.Sprint(m["address"])}
		for _, u := range m["upstreams"].([]any) {
			sv.Upstreams = append(sv.Upstreams, fmt.Sprint(u))
		}
		vips = append(vips, sv)
		prefixes = append(prefixes, netip.PrefixFrom(netip.MustParseAddr(sv.Address), 32))
	}
	s, err := site.New(ctx, dc, bins, site.Config{VIPs: vips})
	if err != nil {
		t.Fatal(err)
	}

	// What must already fit the lab, as written.
	bird := cfg["bird"].(map[string]any)
	protos := bird["protocols"].([]any)
	for key, got := range map[string]string{
		"apisix_control_url": fmt.Sprint(cfg["apisix_control_url"]),
		"interface":          fmt.Sprint(cfg["interface"]),
		"status_listen":      fmt.Sprint(cfg["status_listen"]),
	} {
		want := map[string]string{"apisix_control_url": "http://127.0.0.1:9090", "interface": dc.Iface, "status_listen": s.StatusAddr}[key]
		if got != want {
			t.Errorf("README step 5: %s is %q; the lab (and the shipped defaults) have %q", key, got, want)
		}
	}
	for _, p := range protos {
		if !slices.Contains(dc.Protocols, fmt.Sprint(p)) {
			t.Errorf("README step 5: bird.protocols names %v, the lab host has %v", p, dc.Protocols)
		}
	}
	// The host's own paths, moved into the lab host's directory.
	cfg["main_log"] = filepath.Join(dc.Dir, "main.log")
	cfg["error_log"] = filepath.Join(dc.Dir, "error.log")
	bird["socket"] = dc.BirdSocket
	cfg["control_socket"] = filepath.Join(dc.Dir, "rhi.sock")
	cfg["drain_file"] = filepath.Join(dc.Dir, "drain")
	cfg["state_file"] = filepath.Join(dc.Dir, "owned")
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Config, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.StopRHI()
		if t.Failed() {
			for _, f := range []string{"main.log", "error.log"} {
				b, _ := os.ReadFile(filepath.Join(dc.Dir, f))
				t.Logf("%s:\n%s", f, b)
			}
		}
	})

	// Step 5: rhi check-config, exit 0 and no warning.
	if out, code, err := s.RHICommand(ctx, "check-config", "--quiet"); err != nil || code != 0 || strings.Contains(out, "warning") {
		t.Fatalf("rhi check-config: exit %d %v:\n%s", code, err, out)
	}

	// Step 6: the dry run changes nothing and says so.
	if err := s.StartRHI(ctx, "--dry-run"); err != nil {
		t.Fatal(err)
	}
	out2, code, err := s.RHICommand(ctx, "status")
	if err != nil || code != 0 || !strings.Contains(out2, "DRY RUN") {
		t.Fatalf("rhi status in the dry run: exit %d %v:\n%s", code, err, out2)
	}
	if got, err := s.Addrs(ctx); err != nil || len(got) != 0 {
		t.Fatalf("the dry run put %v on %s (%v)", got, dc.Iface, err)
	}
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}

	// Step 7: start; the router gets every VIP from this host.
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = lab.Eventually(wctx, 0, 0, func(ctx context.Context) error {
		for _, p := range prefixes {
			v, err := site.Peer(ctx, l, p)
			if err != nil {
				return err
			}
			if want := "via " + dc.Name + " (paths from " + dc.Name + ")"; v.String() != want {
				return fmt.Errorf("%v: %s, want %s", p, v, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the router: %v", err)
	}

	// Step 8: rhi verify exits 0.
	out3, code, err := s.RHICommand(ctx, "verify")
	if err != nil || code != 0 {
		t.Fatalf("rhi verify: exit %d %v:\n%s", code, err, out3)
	}
	t.Logf("rhi verify, exit 0:\n%s", out3)
}
