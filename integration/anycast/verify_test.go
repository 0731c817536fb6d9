//go:build integration

package anycast

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"github.com/rhi-daemon/rhi/internal/status"
)

// verifyDeadline bounds each wait for `rhi verify` to reach an exit code:
// BGP sessions come back after the ADC's connect retry (5 s) and a hold
// exchange, so this is generous on purpose.
const verifyDeadline = 90 * time.Second

// verifyRun is one `rhi verify --json` run inside a site's namespace.
type verifyRun struct {
	code   int
	stdout string
	stderr string
	doc    verifyDoc // the parsed stdout; zero when it did not parse
}

// verifyDoc is the part of `rhi verify --json` these tests read.
type verifyDoc struct {
	ExitCode    int `json:"exit_code"`
	Expectation struct {
		Source string `json:"source"`
	} `json:"expectation"`
	Check struct {
		Problems  []string `json:"problems"`
		Protocols []struct {
			Name        string `json:"name"`
			Established bool   `json:"established"`
		} `json:"protocols"`
		VIPs []struct {
			VIP      string `json:"vip"`
			Expected string `json:"expected"`
			Agrees   bool   `json:"agrees"`
		} `json:"vips"`
	} `json:"check"`
}

func (r verifyRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runVerify runs the built rhi's `verify --json --config <site config>`
// inside the site's namespace, where status_listen and rhi0 are.
func runVerify(ctx context.Context, s *Site, args ...string) (verifyRun, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := s.DC.Exec(ctx, bins.RHI, append([]string{"verify", "--json", "--config", s.Config}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return verifyRun{}, err
	}
	r := verifyRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
	if err := json.Unmarshal(out.Bytes(), &r.doc); err != nil {
		return r, fmt.Errorf("stdout is not JSON: %w\n%s", err, r)
	}
	if r.doc.ExitCode != r.code {
		return r, fmt.Errorf("JSON exit_code %d, process exit %d", r.doc.ExitCode, r.code)
	}
	return r, nil
}

// verifyExits waits until `rhi verify` on s exits with code, and returns
// that run.
func (w *world) verifyExits(t *testing.T, s *Site, code int, args ...string) verifyRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verifyDeadline)
	defer cancel()
	var last verifyRun
	runs := 0
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		r, err := runVerify(ctx, s, args...)
		last = r
		runs++
		if err == nil && r.code != code {
			err = fmt.Errorf("exit %d", r.code)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: rhi verify %s never exited %d: %v\nlast run: %s", s.DC.Name, strings.Join(args, " "), code, err, last)
	}
	t.Logf("%s: rhi verify exited %d (run %d): %s", s.DC.Name, code, runs, summary(last.stdout))
	return last
}

// wantVIPs checks that every VIP of the run is expected as want and agrees.
func wantVIPs(t *testing.T, r verifyRun, source, want string, n int) {
	t.Helper()
	if r.doc.Expectation.Source != source {
		t.Errorf("expectation from %q, want %q\n%s", r.doc.Expectation.Source, source, r)
	}
	if len(r.doc.Check.VIPs) != n {
		t.Fatalf("%d VIPs checked, want %d\n%s", len(r.doc.Check.VIPs), n, r)
	}
	for _, v := range r.doc.Check.VIPs {
		if v.Expected != want || !v.Agrees {
			t.Errorf("%s: expected %q, agrees %v; want %q and agreeing\n%s", v.VIP, v.Expected, v.Agrees, want, r)
		}
	}
}

// TestVerifyPeerSession: with rhi announcing, verify confirms every VIP
// (exit 0); when the router drops the IPv4 session, verify reports the
// session (exit 1); when it returns, exit 0 again. A socket that does not
// exist cannot be checked (exit 2).
func TestVerifyPeerSession(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)

	r := w.verifyExits(t, s, 0)
	wantVIPs(t, r, "daemon", "present", len(site.Seed))

	peerSession := s.DC.PeerProtos[0] // the router's IPv4 session to dc1
	if _, err := w.lab.Peer.Birdc(ctx, "disable "+peerSession); err != nil {
		t.Fatal(err)
	}
	r = w.verifyExits(t, s, 1)
	down := 0
	for _, p := range r.doc.Check.Protocols {
		if !p.Established {
			down++
			if p.Name != s.DC.Protocols[0] {
				t.Errorf("protocol %q not Established; only %q should be\n%s", p.Name, s.DC.Protocols[0], r)
			}
		}
	}
	if down == 0 {
		t.Errorf("exit 1 without a protocol that is not Established\n%s", r)
	}
	// The session carried every (IPv4) VIP: none is announced now.
	for _, v := range r.doc.Check.VIPs {
		if v.Agrees {
			t.Errorf("%s agrees while the only session that carries it is down\n%s", v.VIP, r)
		}
	}
	// The daemon says so once for all of them, after its grace period.
	s.logLines(t, "rhi-error.log", 1, "BIRD disagrees with the interface", "no Established BGP session carries it", fmt.Sprintf("vips=%d", len(site.Seed)))

	if _, err := w.lab.Peer.Birdc(ctx, "enable "+peerSession); err != nil {
		t.Fatal(err)
	}
	r = w.verifyExits(t, s, 0)
	wantVIPs(t, r, "daemon", "present", len(site.Seed))
	s.logLines(t, "rhi-error.log", 1, "BIRD agrees now", fmt.Sprintf("vips=%d", len(site.Seed)))

	r, err := runVerify(ctx, s, "--bird-socket", "/nonexistent/bird.ctl")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 2 || !strings.Contains(r.stderr, `"/nonexistent/bird.ctl"`) {
		t.Errorf("bogus socket: want exit 2 naming it on stderr\n%s", r)
	}
}

// TestVerifyWithdrawn: when dc1's backends die and rhi withdraws, absent is
// expected and absent everywhere (exit 0), while dc2 still announces. With
// rhi stopped, verify judges from a fresh poll of the control API; backends
// that recover while nobody puts the VIPs back are a mismatch until rhi
// runs again.
func TestVerifyWithdrawn(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed}, site.Config{VIPs: site.Seed})
	dc1, dc2 := w.sites[0], w.sites[1]
	vips := seedAddrs()
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", vips...)
	wantVIPs(t, w.verifyExits(t, dc1, 0), "daemon", "present", len(site.Seed))

	if err := dc1.SetAll("unhealthy", site.Keys(site.Seed)...); err != nil {
		t.Fatal(err)
	}
	dc1.holds(t, "")
	w.peerSees(t, "via dc2 (paths from dc2)", vips...)
	wantVIPs(t, w.verifyExits(t, dc1, 0), "daemon", "absent", len(site.Seed))
	wantVIPs(t, w.verifyExits(t, dc2, 0), "daemon", "present", len(site.Seed))

	if err := dc1.StopRHI(); err != nil {
		t.Fatal(err)
	}
	wantVIPs(t, w.verifyExits(t, dc1, 0), "poll", "absent", len(site.Seed))

	if err := dc1.SetAll("healthy", site.Keys(site.Seed)...); err != nil {
		t.Fatal(err)
	}
	r := w.verifyExits(t, dc1, 1)
	if r.doc.Expectation.Source != "poll" {
		t.Errorf("expectation from %q, want the fresh poll\n%s", r.doc.Expectation.Source, r)
	}
	for _, v := range r.doc.Check.VIPs {
		if v.Expected != "present" || v.Agrees {
			t.Errorf("%s: expected %q, agrees %v; want present and disagreeing (not on the interface)\n%s", v.VIP, v.Expected, v.Agrees, r)
		}
	}

	if err := dc1.StartRHI(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.peerSees(t, "via dc1 (paths from dc1, dc2)", vips...)
	wantVIPs(t, w.verifyExits(t, dc1, 0), "daemon", "present", len(site.Seed))
}

// summary picks the report's one-line summary out of the JSON.
func summary(stdout string) string {
	var doc struct {
		Check struct {
			Summary string `json:"summary"`
		} `json:"check"`
	}
	_ = json.Unmarshal([]byte(stdout), &doc)
	return doc.Check.Summary
}

// renewWait covers the daemon's renewAfter (2 s) of disagreement and the
// confirmation retry that would act on it (at 3 s).
const renewWait = 4 * time.Second

// logLines waits until the site's log file holds a line with every one of
// substrs, then checks that it holds exactly want of them once the BIRD
// check that wrote the line is over: one line for all the VIPs of a check,
// not one per VIP.
//
// The end of that check is an event, not a pause: rhi writes a check's log
// lines (synchronously) while it records the check, and /status reads the
// confirmation under the same lock, so a /status answered after the line
// was seen comes after every line of that check.
func (s *Site) logLines(t *testing.T, file string, want int, substrs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verifyDeadline)
	defer cancel()
	err := lab.Eventually(ctx, 0, 0, func(context.Context) error {
		if s.logCount(t, file, substrs...) == 0 {
			return fmt.Errorf("no line with %q in %s", substrs, file)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bird.LastCheck.IsZero() {
		t.Fatalf("%s: a line with %q in %s, but /status shows no BIRD check", s.DC.Name, substrs, file)
	}
	if n := s.logCount(t, file, substrs...); n != want {
		t.Errorf("%d lines with %q in %s, want %d", n, substrs, file, want)
	}
}

// TestVerifyDirectInAnotherTable: with the ADC's direct protocol importing
// IPv4 into its own table vip4 (the sessions export from it), verify finds
// the VIPs there (exit 0) and the daemon renews nothing. With the direct
// protocol disabled, verify says why nothing can be announced (exit 1), and
// the daemon still renews nothing: the addresses are fine, BIRD is not.
func TestVerifyDirectInAnotherTable(t *testing.T) {
	conf := replaceOnce(t, birdconf.ADC(), "protocol direct rhi_direct {\n  ipv4;\n",
		"ipv4 table vip4;\n\nprotocol direct rhi_direct {\n  ipv4 { table vip4; };\n")
	conf = replaceOnce(t, conf, "template bgp rhi_peer4 {\n  connect retry time 5;\n  ipv4 {\n",
		"template bgp rhi_peer4 {\n  connect retry time 5;\n  ipv4 {\n    table vip4;\n")
	l := lab.ForTest(t, lab.Options{DCs: 1, ADCConfig: conf})
	w := &world{lab: l}
	ctx := context.Background()
	s, err := NewSite(ctx, l.DCs[0], bins, site.Config{VIPs: site.Seed})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	w.sites = []*Site{s}
	t.Cleanup(func() { s.StopRHI() })
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)

	wantVIPs(t, w.verifyExits(t, s, 0), "daemon", "present", len(site.Seed))
	// noRenewals: the daemon's own confirmation has seen what verify saw
	// (seen accepts its status) and, while BIRD disagrees, has gone on
	// checking for longer than a disagreement takes to be renewed (an
	// agreeing daemon does not renew, and checks again only on a change);
	// yet it renewed nothing. Bounded on those checks, not on a pause.
	noRenewals := func(what string, seen func(status.Status) error) {
		t.Helper()
		first := s.statusWithin(t, time.Minute, what, seen)
		st := first
		if first.Bird.Disagree > 0 || len(first.Bird.Problems) > 0 {
			st = s.statusWithin(t, time.Minute, "checked BIRD for longer than a renewal takes", func(st status.Status) error {
				if d := st.Bird.LastCheck.Sub(first.Bird.LastCheck); d < renewWait {
					return errorf("last check %s after the first that saw it, want %s", d, renewWait)
				}
				return nil
			})
		}
		for _, v := range st.VIPs {
			if v.Bird != nil && v.Bird.Renewed > 0 {
				t.Errorf("%s renewed %d times", v.Address, v.Bird.Renewed)
			}
		}
		if n := s.logCount(t, "rhi-main.log", "renewing those addresses"); n != 0 {
			t.Errorf("%d renewals logged", n)
		}
	}
	noRenewals("confirmed every VIP in table vip4", func(st status.Status) error {
		if st.Bird.Error != "" || st.Bird.Agree != len(site.Seed) || st.Bird.Disagree != 0 {
			return errorf("BIRD agrees on %d, disagrees on %d, error %q", st.Bird.Agree, st.Bird.Disagree, st.Bird.Error)
		}
		return nil
	})

	if _, err := s.DC.Birdc(ctx, "disable rhi_direct"); err != nil {
		t.Fatal(err)
	}
	r := w.verifyExits(t, s, 1)
	const problem = "no direct protocol in BIRD imports ipv4 routes: IPv4 VIPs cannot be announced"
	if len(r.doc.Check.Problems) == 0 || r.doc.Check.Problems[0] != problem {
		t.Errorf("problems %q, want %q first\n%s", r.doc.Check.Problems, problem, r)
	}
	noRenewals("seen that BIRD cannot announce", func(st status.Status) error {
		if !slices.Contains(st.Bird.Problems, problem) {
			return errorf("BIRD's problems %q, want %q", st.Bird.Problems, problem)
		}
		return nil
	})

	if _, err := s.DC.Birdc(ctx, "enable rhi_direct"); err != nil {
		t.Fatal(err)
	}
	wantVIPs(t, w.verifyExits(t, s, 0), "daemon", "present", len(site.Seed))
}
