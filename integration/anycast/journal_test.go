//go:build integration

package anycast

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
)

// nagiosExits runs `rhi verify --nagios` on s until it exits code, and
// returns its output, which must be one plugin line.
func (w *world) nagiosExits(t *testing.T, s *Site, code int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), verifyDeadline)
	defer cancel()
	var out string
	var got int
	err := lab.Eventually(ctx, 0, 0, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var err error
		out, got, err = s.RHICommand(cctx, "verify", "--nagios")
		if err == nil && got != code {
			err = fmt.Errorf("exit %d", got)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: rhi verify --nagios never exited %d: %v\nlast: exit %d: %s", s.DC.Name, code, err, got, out)
	}
	t.Logf("%s: rhi verify --nagios: exit %d: %s", s.DC.Name, got, strings.TrimSpace(out))
	if strings.Count(out, "\n") != 1 {
		t.Errorf("rhi verify --nagios printed more than one line:\n%s", out)
	}
	return out
}

// TestVerifyNagios: one plugin line with perfdata; OK while BIRD carries
// every VIP, CRITICAL while the session that carries them is down, OK again.
func TestVerifyNagios(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	w.peerSees(t, "via dc1 (paths from dc1)", seedAddrs()...)

	n := len(site.Seed)
	ok := regexp.MustCompile(fmt.Sprintf(`^RHI OK - %d VIPs agree, (\d) of (\d) sessions Established \| vips=%d agree=%d disagree=0 sessions_up=(\d)\n$`, n, n, n))
	out := w.nagiosExits(t, s, 0)
	m := ok.FindStringSubmatch(out)
	if m == nil || m[1] != m[2] || m[1] != m[3] {
		t.Errorf("OK line %q does not match %s", out, ok)
	}
	peerSession := s.DC.PeerProtos[0] // the router's IPv4 session to dc1
	if _, err := w.lab.Peer.Birdc(ctx, "disable "+peerSession); err != nil {
		t.Fatal(err)
	}
	out = w.nagiosExits(t, s, 2)
	if want := fmt.Sprintf("| vips=%d agree=0 disagree=%d sessions_up=", n, n); !strings.HasPrefix(out, "RHI CRITICAL - ") || !strings.Contains(out, want) {
		t.Errorf("CRITICAL line %q lacks %q", out, want)
	}
	if _, err := w.lab.Peer.Birdc(ctx, "enable "+peerSession); err != nil {
		t.Fatal(err)
	}
	w.nagiosExits(t, s, 0)
}

// TestJournalStderr: started as systemd starts it, with JOURNAL_STREAM
// naming its stderr, rhi writes every line there behind its syslog
// priority; an error (a rejected reload) reaches stderr as <3> while both
// log files still get it.
func TestJournalStderr(t *testing.T) {
	w := newWorld(t, site.Config{VIPs: site.Seed})
	s := w.sites[0]
	ctx := context.Background()
	if err := s.StopRHI(); err != nil {
		t.Fatal(err)
	}
	// JOURNAL_STREAM is "device:inode" of the stream, as systemd sets it.
	p, err := s.DC.Start(ctx, "rhi-journal", "sh", "-c",
		`JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$0" run --config "$1"`, bins.RHI, s.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	stderrHas := func(re *regexp.Regexp) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := lab.Eventually(wctx, 0, 0, func(context.Context) error {
			b, err := os.ReadFile(p.Stderr)
			if err == nil && !re.Match(b) {
				err = errorf("stderr lacks %s", re)
			}
			return err
		}); err != nil {
			b, _ := os.ReadFile(p.Stderr)
			t.Fatalf("%v:\n%s", err, b)
		}
	}
	stderrHas(regexp.MustCompile(`(?m)^<6>time="?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[^ ]* level=info msg="rhi starting"`))

	good, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(s.Config, good, 0o644) })
	if err := os.WriteFile(s.Config, append(good, []byte("rise: nope\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	stderrHas(regexp.MustCompile(`(?m)^<3>time=.* level=error msg="reload rejected`))
	for _, f := range []string{"rhi-main.log", "rhi-error.log"} {
		s.logHas(t, f, `level=error msg="reload rejected`)
		if b, _ := os.ReadFile(filepath.Join(s.DC.Dir, f)); strings.Contains(string(b), "<3>") {
			t.Errorf("%s has priority prefixes: they are for the journal only", f)
		}
	}
}
