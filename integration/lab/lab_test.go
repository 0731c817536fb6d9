//go:build integration

package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rhi-daemon/rhi/bird"
)

func TestMain(m *testing.M) {
	// A crashed earlier run may have left labs behind; labs of running
	// processes (other test packages) are not touched.
	if Available() == nil {
		if removed, err := Sweep(context.Background(), DefaultPrefix); err != nil || len(removed) > 0 {
			fmt.Fprintf(os.Stderr, "swept leftovers %v: %v\n", removed, err)
		}
	}
	os.Exit(m.Run())
}

// paths describes the peer's view of prefix as "dc1 via 10.99.1.2 best", one
// line per path.
func paths(ctx context.Context, r *Router, prefix netip.Prefix) ([]string, error) {
	routes, err := r.Routes(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rt := range routes {
		s := fmt.Sprintf("%s via %s", rt.From, rt.NextHop)
		if rt.Best {
			s += " best"
		}
		out = append(out, s)
	}
	return out, nil
}

// waitPaths waits until the peer's view of prefix is want.
func waitPaths(t *testing.T, l *Lab, prefix netip.Prefix, want []string) {
	t.Helper()
	var got []string
	err := Eventually(t.Context(), 0, 0, func(ctx context.Context) error {
		var err error
		if got, err = paths(ctx, l.Peer, prefix); err == nil && !cmp.Equal(want, got) {
			err = errors.New("other paths")
		}
		return err
	})
	if err != nil {
		t.Fatalf("peer's paths for %s: %v\n(-want +got):\n%s", prefix, err, cmp.Diff(want, got))
	}
}

func TestSessionsEstablished(t *testing.T) {
	l := ForTest(t, Options{})
	for _, r := range l.routers() {
		ps, err := r.Protocols(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			if p.Proto == "BGP" {
				got = append(got, p.Name+" "+p.State+" "+p.Info)
			}
		}
		want := []string{"peer_4 up Established", "peer_6 up Established"}
		if r == l.Peer {
			want = []string{"dc1_4 up Established", "dc1_6 up Established", "dc2_4 up Established", "dc2_6 up Established"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: BGP protocols (-want +got):\n%s", r.Name, diff)
		}
	}
}

// TestAnycastFailover announces a VIP from dc1, then dc2, withdraws it from
// dc1 and then dc2, and follows the peer's table at each step.
func TestAnycastFailover(t *testing.T) {
	l := ForTest(t, Options{})
	dc1, dc2 := l.DCs[0], l.DCs[1]
	tests := []struct {
		name       string
		vip        netip.Prefix
		addFlags   []string
		hop1, hop2 string
	}{
		{"ipv4", netip.MustParsePrefix("10.255.0.10/32"), nil, "10.99.1.2", "10.99.2.2"},
		{"ipv6", netip.MustParsePrefix("fd00:255::10/128"), []string{"nodad"}, "fd00:99:1::2", "fd00:99:2::2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ip := func(d *DC, verb string) {
				t.Helper()
				args := append([]string{"addr", verb, tc.vip.String(), "dev", d.Iface}, tc.addFlags...)
				if _, err := d.Run(t.Context(), "ip", args...); err != nil {
					t.Fatal(err)
				}
			}
			waitPaths(t, l, tc.vip, nil)
			ip(dc1, "add")
			waitPaths(t, l, tc.vip, []string{"dc1 via " + tc.hop1 + " best"})
			ip(dc2, "add")
			waitPaths(t, l, tc.vip, []string{"dc1 via " + tc.hop1 + " best", "dc2 via " + tc.hop2})
			ip(dc1, "del")
			waitPaths(t, l, tc.vip, []string{"dc2 via " + tc.hop2 + " best"})
			ip(dc1, "add")
			waitPaths(t, l, tc.vip, []string{"dc1 via " + tc.hop1 + " best", "dc2 via " + tc.hop2})
			ip(dc1, "del")
			ip(dc2, "del")
			waitPaths(t, l, tc.vip, nil)
		})
	}
}

// TestOnlyHostRoutesLeave checks the shipped export filter: of what is on
// rhi0, only /32 and /128 routes reach the peer; a subnet added by hand (its
// direct route is the subnet's) stays in the ADC's table.
func TestOnlyHostRoutesLeave(t *testing.T) {
	l := ForTest(t, Options{DCs: 1})
	dc1 := l.DCs[0]
	families := []struct {
		subnetAddr string       // added to rhi0: gives a route for subnet
		subnet     netip.Prefix // must stay home
		host       netip.Prefix // a VIP: must reach the peer
		hop        string       // dc1's address towards the peer
		proto      string       // dc1's session
	}{
		{"10.255.30.1/24", netip.MustParsePrefix("10.255.30.0/24"), netip.MustParsePrefix("10.255.0.30/32"), "10.99.1.2", "peer_4"},
		{"fd00:255:30::1/64", netip.MustParsePrefix("fd00:255:30::/64"), netip.MustParsePrefix("fd00:255::30/128"), "fd00:99:1::2", "peer_6"},
	}
	add := func(addr string) {
		t.Helper()
		if _, err := dc1.Run(t.Context(), "ip", "addr", "add", addr, "dev", dc1.Iface, "nodad"); err != nil {
			t.Fatal(err)
		}
	}
	// The subnets first: by the time the peer has the host routes, added
	// after them, it would have the subnets too if they were exported.
	for _, f := range families {
		add(f.subnetAddr)
	}
	for _, f := range families {
		add(f.host.String())
	}
	for _, f := range families {
		err := Eventually(t.Context(), 0, 0, func(ctx context.Context) error {
			rs, err := dc1.Routes(ctx, f.subnet)
			if err == nil && (len(rs) == 0 || rs[0].Protocol != "rhi_direct") {
				err = fmt.Errorf("routes %+v", rs)
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s not in dc1's table from rhi_direct: %v", f.subnet, err)
		}
		waitPaths(t, l, f.host, []string{"dc1 via " + f.hop + " best"})
	}
	for _, f := range families {
		if got, err := paths(t.Context(), l.Peer, f.subnet); err != nil || len(got) > 0 {
			t.Errorf("peer's paths for %s: %v, %v; want none", f.subnet, got, err)
		}
		reply, err := dc1.Query(t.Context(), "show route export "+f.proto+" "+f.subnet.String())
		var be *bird.Error
		if err != nil && (!errors.As(err, &be) || be.Code != bird.CodeNetworkNotFound) {
			t.Fatal(err)
		}
		for _, l := range reply.Lines {
			if strings.Contains(l.Text, f.subnet.String()) {
				t.Errorf("dc1 exports %s to %s: %q", f.subnet, f.proto, l.Text)
			}
		}
	}
}

// TestPeerKernelRoute checks that the router installs its best path, which
// is what `make demo` shows with `ip route`.
func TestPeerKernelRoute(t *testing.T) {
	l := ForTest(t, Options{DCs: 1})
	if _, err := l.DCs[0].Run(t.Context(), "ip", "addr", "add", "10.255.0.20/32", "dev", "rhi0"); err != nil {
		t.Fatal(err)
	}
	var got string
	err := Eventually(t.Context(), 0, 0, func(ctx context.Context) error {
		out, err := l.Peer.Run(ctx, "ip", "-4", "-o", "route", "show", "10.255.0.20/32")
		got = strings.TrimSpace(out)
		if err == nil && !strings.HasPrefix(got, "10.255.0.20 via 10.99.1.2 dev dc1 proto bird") {
			err = errors.New("no route via dc1 yet")
		}
		return err
	})
	if err != nil {
		t.Fatalf("peer's kernel route: %v (last: %q)", err, got)
	}
}

// TestADCNetlinkBuffer checks that the shipped kernel protocol gives BIRD's
// netlink sockets the 8 MiB receive buffer (the kernel reports twice that).
func TestADCNetlinkBuffer(t *testing.T) {
	l := ForTest(t, Options{DCs: 1})
	out, err := l.DCs[0].Run(t.Context(), "ss", "-f", "netlink", "-m", "-p")
	if err != nil {
		t.Fatal(err)
	}
	var rbs []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "rtnl:bird") {
			continue
		}
		_, after, ok := strings.Cut(line, ",rb")
		if !ok {
			t.Fatalf("no rb in %q", line)
		}
		rb, _, _ := strings.Cut(after, ",")
		rbs = append(rbs, rb)
		if n, err := strconv.Atoi(rb); err != nil || n < 8<<20 {
			t.Errorf("BIRD netlink socket receive buffer %q, want at least 8 MiB\n%s", rb, line)
		}
	}
	if len(rbs) == 0 {
		t.Fatalf("no BIRD netlink socket in ss output:\n%s", out)
	}
}

func TestProc(t *testing.T) {
	l := ForTest(t, Options{DCs: 1})
	dc1 := l.DCs[0]

	t.Run("runs in the namespace with its output captured", func(t *testing.T) {
		p, err := dc1.Start(t.Context(), "links", "sh", "-c", "ip -o link show dev rhi0; echo oops >&2; exit 3")
		if err != nil {
			t.Fatal(err)
		}
		err = p.Wait(t.Context())
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("Wait() = %v, want exit status 3", err)
		}
		for path, want := range map[string]string{p.Stdout: "rhi0", p.Stderr: "oops"} {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), want) {
				t.Errorf("%s = %q, want it to contain %q", path, data, want)
			}
		}
	})
	t.Run("stop", func(t *testing.T) {
		p, err := dc1.Start(t.Context(), "sleeper", "sleep", "600")
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(); err != nil {
			t.Errorf("Stop() = %v, want a clean stop", err)
		}
		if err := p.Stop(); err != nil {
			t.Errorf("second Stop() = %v, want nil", err)
		}
		if err := p.Signal(os.Interrupt); !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("Signal() after exit = %v, want os.ErrProcessDone", err)
		}
	})
	t.Run("stop kills what ignores SIGTERM", func(t *testing.T) {
		p, err := dc1.Start(t.Context(), "stubborn", "sh", "-c", "trap '' TERM; echo ready; sleep 600 & wait")
		if err != nil {
			t.Fatal(err)
		}
		// Stop only once the trap is set, or SIGTERM would kill sh at once.
		err = Eventually(t.Context(), 0, 0, func(context.Context) error {
			data, err := os.ReadFile(p.Stdout)
			if err == nil && !strings.Contains(string(data), "ready") {
				err = errors.New("not ready")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(); err == nil {
			t.Error("Stop() = nil, want the report that it had to kill")
		}
	})
	t.Run("duplicate name", func(t *testing.T) {
		if _, err := dc1.Start(t.Context(), "sleeper", "true"); err == nil {
			t.Error("second Start with the same name succeeded, want an error")
		}
	})
}

// TestClose closes a lab that still has a process running and checks that
// nothing is left: namespaces, BIRDs, the process, the directory.
func TestClose(t *testing.T) {
	l := ForTest(t, Options{})
	p, err := l.DCs[0].Start(t.Context(), "sleeper", "sleep", "600")
	if err != nil {
		t.Fatal(err)
	}
	var birds []int
	for _, r := range l.routers() {
		data, err := os.ReadFile(filepath.Join(r.Dir, "bird.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		birds = append(birds, pid)
	}

	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if got := labNamespaces(t, l.Name); len(got) > 0 {
		t.Errorf("namespaces left: %v", got)
	}
	for _, pid := range append(birds, p.Pid()) {
		if alive(pid) {
			t.Errorf("pid %d still alive", pid)
		}
	}
	if _, err := os.Stat(l.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lab directory: stat = %v, want it gone", err)
	}
	if _, err := l.DCs[0].Start(t.Context(), "late", "true"); err == nil {
		t.Error("Start after Close succeeded, want an error")
	}
}

// TestFailedBringUpCleansUp gives New no time at all and checks that it
// leaves nothing behind.
func TestFailedBringUpCleansUp(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	const prefix = "rhitest-partial-"
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	l, err := New(ctx, Options{Prefix: prefix})
	if err == nil {
		l.Close()
		t.Fatal("New() with 300 ms succeeded; want the deadline to hit during bring-up")
	}
	if got := labNamespaces(t, prefix); len(got) > 0 {
		t.Errorf("namespaces left after failed bring-up: %v", got)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	if len(dirs) > 0 {
		t.Errorf("directories left after failed bring-up: %v", dirs)
	}
}

// TestParallelLabs builds two labs at once and checks that a VIP on one
// stays invisible to the other.
func TestParallelLabs(t *testing.T) {
	labs := make([]*Lab, 2)
	var wg sync.WaitGroup
	for i := range labs {
		wg.Go(func() { labs[i] = ForTest(t, Options{}) })
	}
	wg.Wait()
	if t.Failed() || t.Skipped() {
		return
	}
	if labs[0].Name == labs[1].Name {
		t.Fatalf("two labs named %q", labs[0].Name)
	}
	vip := netip.MustParsePrefix("10.255.0.30/32")
	if _, err := labs[0].DCs[1].Run(t.Context(), "ip", "addr", "add", vip.String(), "dev", "rhi0"); err != nil {
		t.Fatal(err)
	}
	waitPaths(t, labs[0], vip, []string{"dc2 via 10.99.2.2 best"})
	got, err := paths(t.Context(), labs[1].Peer, vip)
	if err != nil || len(got) > 0 {
		t.Errorf("other lab's peer sees %v, %v; want nothing", got, err)
	}
}

// TestSweep leaves a namespace as a crashed run would (owner pid gone, a
// process inside) and checks that Sweep removes it but not a running lab.
func TestSweep(t *testing.T) {
	const prefix = "rhitest-sweep-"
	live := ForTest(t, Options{Prefix: prefix, DCs: 1})

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-0badcafe-dc1", prefix, gone.Process.Pid)
	if alive(gone.Process.Pid) {
		t.Skipf("pid %d was reused already", gone.Process.Pid)
	}
	if err := runIP(t.Context(), "", "netns", "add", stale); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteNamespace(context.Background(), stale) })
	// The leftover says "ready" from inside the namespace: `ip netns exec`
	// enters it after Start returns, and a namespace deleted before then
	// would leave the process running in an unnamed one, out of Sweep's
	// reach (the test then hung until its timeout).
	leftover := exec.Command("ip", "netns", "exec", stale, "sh", "-c", "echo ready; exec sleep 600")
	out, err := leftover.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leftover.Process.Kill() })
	// Bounded by the process: if it fails, the pipe ends.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("leftover in %s: %q, %v", stale, line, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- leftover.Wait() }()
	staleDir := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-0badcafe", prefix, gone.Process.Pid))
	if err := os.Mkdir(staleDir, 0o755); err != nil {
		t.Fatal(err)
	}

	removed, err := Sweep(t.Context(), prefix)
	if err != nil {
		t.Fatalf("Sweep() error = %v", err)
	}
	if diff := cmp.Diff([]string{stale, staleDir}, removed); diff != "" {
		t.Errorf("Sweep() removed (-want +got):\n%s", diff)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Error("the process inside the stale namespace survived")
	}
	if got := labNamespaces(t, live.Name); len(got) != 2 {
		t.Errorf("live lab's namespaces after Sweep = %v, want its 2", got)
	}
	if err := live.Peer.established(t.Context()); err != nil {
		t.Errorf("live lab after Sweep: %v", err)
	}
}

// labNamespaces lists the namespaces whose names start with prefix.
func labNamespaces(t *testing.T, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// BenchmarkBringUp measures New and Close of a two-ADC lab.
func BenchmarkBringUp(b *testing.B) {
	if err := Available(); err != nil {
		b.Skip(err)
	}
	for b.Loop() {
		l, err := New(b.Context(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
