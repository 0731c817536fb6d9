package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	birdconf "github.com/rhi-daemon/rhi/deploy/bird"
)

// DefaultPrefix starts the names of the labs' namespaces and directories.
const DefaultPrefix = "rhi-"

// closeTime bounds all of Close's external work.
const closeTime = 30 * time.Second

// Options shape a lab. The zero value is a two-ADC lab.
type Options struct {
	// Prefix starts every namespace and directory name; [Sweep] takes the same
	// prefix. Letters, digits, '.', '_' and '-'. Default DefaultPrefix.
	Prefix string
	// DCs is the number of ADC hosts, 1 to 200. Default 2.
	DCs int
	// Dir is where the lab's directory is made. Default os.TempDir(). BIRD's
	// socket paths must stay under 108 bytes.
	Dir string
	// Log receives the lab's progress. Default: discarded.
	Log logrus.FieldLogger
	// Wait is the deadline of bring-up when the caller's context has none.
	// Default DefaultWait.
	Wait time.Duration
	// ADCConfig, if set, replaces the shipped deploy/bird/adc.conf on every
	// ADC host.
	ADCConfig string
	// BaseConfig, if set, replaces the shipped deploy/bird/base.conf (device
	// and kernel protocols) on every ADC host: for tests of a BIRD without
	// rhi's tuning.
	BaseConfig string
	// PeerConfig, if set, replaces the shipped deploy/bird/peer.conf on the
	// router: for a router that, say, sends no ADD-PATH.
	PeerConfig string

	// Tiers, if set, makes every ADC host include deploy/bird/tiers.conf
	// instead of adc.conf, after these defines, and gives it the links rhi1
	// and rhi2 beside rhi0. AS and SiteID are each host's own (its AS and
	// its router id as a number) and are ignored here.
	Tiers *birdconf.Defines
	// ADCAS, if set, is the AS of every ADC host instead of 65001, 65002, …:
	// sites that share an AS, and with the router's 65000, iBGP (with Tiers,
	// through tiers.conf's iBGP templates).
	ADCAS uint32
	// ADCSession and PeerSession are lines added to every BGP session of the
	// ADC hosts and of the router, e.g. "allow local as;" and "rr client;".
	ADCSession, PeerSession string
	// Bird is the command that runs BIRD, without its arguments. Default
	// "bird" from PATH. See Bird3.
	Bird []string
}

// Lab is a running netns lab. Its methods are safe for concurrent use.
type Lab struct {
	Name string // <prefix><pid>-<random>, the start of every namespace name
	Dir  string // the lab's files; removed by Close
	Peer *Router
	DCs  []*DC

	log  logrus.FieldLogger
	opts Options // as given to New, defaults applied

	mu         sync.Mutex
	closed     bool
	namespaces []string // created, in order
	procs      []*Proc

	closeOnce sync.Once
	closeErr  error
}

// Available reports why the lab cannot run here, or nil: it needs root, ip,
// bird and birdc.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("the netns lab needs root")
	}
	for _, tool := range []string{"ip", "bird", "birdc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the netns lab needs %q: %w", tool, err)
		}
	}
	return nil
}

// New builds a lab and returns once every BGP session is Established. ctx
// bounds the bring-up only. On failure New removes what it built.
func New(ctx context.Context, opts Options) (_ *Lab, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}

	var random [4]byte
	if _, err := rand.Read(random[:]); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s%d-%s", opts.Prefix, os.Getpid(), hex.EncodeToString(random[:]))
	l := &Lab{
		Name: name,
		Dir:  filepath.Join(opts.Dir, name),
		log:  opts.Log.WithField("lab", name),
		opts: opts,
	}
	plan(l)
	if n := len(l.DCs[len(l.DCs)-1].BirdSocket); n > 107 {
		return nil, fmt.Errorf("lab directory %q: BIRD socket path is %d bytes, the limit is 107", opts.Dir, n)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Wait)
		defer cancel()
	}

	start := time.Now()
	l.log.WithField("action", "bring-up").Infof("building lab with %d ADC hosts in %s", opts.DCs, l.Dir)
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab %q: %w", name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("lab %q: %w", name, err), l.Close())
		}
	}()
	if err := l.buildNetwork(ctx); err != nil {
		return nil, err
	}
	if err := writeConfigs(l); err != nil {
		return nil, err
	}
	if err := l.startBird(ctx); err != nil {
		return nil, err
	}
	l.log.WithField("action", "bring-up").Infof("lab up in %s", time.Since(start).Round(time.Millisecond))
	return l, nil
}

// fill checks o and sets the defaults of the options left zero.
func (o *Options) fill() error {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !validPrefix(o.Prefix) {
		return fmt.Errorf("lab prefix %q: use letters, digits, '.', '_' and '-'", o.Prefix)
	}
	if o.DCs == 0 {
		o.DCs = 2
	}
	if o.DCs < 1 || o.DCs > maxDCs {
		return fmt.Errorf("lab with %d ADC hosts: allowed 1 to %d", o.DCs, maxDCs)
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if strings.ContainsAny(o.Dir, "\"\n") {
		return fmt.Errorf("lab directory %q: no quotes or line breaks (it goes into BIRD's config)", o.Dir)
	}
	if o.Log == nil {
		discard := logrus.New()
		discard.SetOutput(io.Discard)
		o.Log = discard
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if len(o.Bird) == 0 {
		o.Bird = []string{"bird"}
	}
	return nil
}

// startBird starts every router's BIRD, the peer's first (it only listens,
// and the ADCs connect a second after they start), and waits until their
// BGP sessions are Established.
func (l *Lab) startBird(ctx context.Context) error {
	for _, r := range l.routers() {
		argv := append(slices.Clone(l.opts.Bird), "-f", "-c", r.BirdConfig, "-s", r.BirdSocket, "-P", filepath.Join(r.Dir, "bird.pid"))
		if _, err := r.Start(context.Background(), "bird", argv...); err != nil {
			return err
		}
	}
	for _, r := range l.routers() {
		if err := Eventually(ctx, 0, 0, r.established); err != nil {
			return fmt.Errorf("bgp sessions of %q: %w", r.Name, err)
		}
	}
	return nil
}

// routers lists the peer and then the ADCs.
func (l *Lab) routers() []*Router {
	rs := []*Router{l.Peer}
	for _, d := range l.DCs {
		rs = append(rs, d.Router)
	}
	return rs
}

// buildNetwork makes the namespaces, links and addresses, with one `ip -batch`
// per namespace.
func (l *Lab) buildNetwork(ctx context.Context) error {
	for _, r := range l.routers() {
		if err := runIP(ctx, "", "netns", "add", r.NS); err != nil {
			return err
		}
		l.mu.Lock()
		l.namespaces = append(l.namespaces, r.NS)
		l.mu.Unlock()
	}
	var peer strings.Builder
	peer.WriteString("link set lo up\n")
	for _, d := range l.DCs {
		fmt.Fprintf(&peer, "link add %s type veth peer name %s netns %s\n", d.PeerIface, d.ADCIface, d.NS)
		fmt.Fprintf(&peer, "addr add %s/24 dev %s\n", d.PeerAddr4, d.PeerIface)
		fmt.Fprintf(&peer, "addr add %s/64 dev %s nodad\n", d.PeerAddr6, d.PeerIface)
		fmt.Fprintf(&peer, "link set %s up\n", d.PeerIface)
	}
	if err := runBatch(ctx, l.Peer.NS, peer.String()); err != nil {
		return err
	}
	for _, d := range l.DCs {
		var b strings.Builder
		b.WriteString("link set lo up\n")
		fmt.Fprintf(&b, "addr add %s/24 dev %s\n", d.ADCAddr4, d.ADCIface)
		fmt.Fprintf(&b, "addr add %s/64 dev %s nodad\n", d.ADCAddr6, d.ADCIface)
		fmt.Fprintf(&b, "link set %s up\n", d.ADCIface)
		// ifb: the kernel here has no dummy link type; production uses dummy.
		links := []string{d.Iface}
		if l.opts.Tiers != nil {
			links = append(links, birdconf.DegradedInterface, birdconf.LastResortInterface)
		}
		for _, link := range links {
			fmt.Fprintf(&b, "link add %s type ifb\n", link)
			fmt.Fprintf(&b, "link set %s up\n", link)
		}
		if err := runBatch(ctx, d.NS, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// runIP runs ip, inside ns unless ns is empty.
func runIP(ctx context.Context, ns string, args ...string) error {
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	out, err := combined(exec.CommandContext(ctx, "ip", args...))
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out))
	}
	return nil
}

func runBatch(ctx context.Context, ns, script string) error {
	cmd := exec.CommandContext(ctx, "ip", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(script)
	out, err := combined(cmd)
	if err != nil {
		return fmt.Errorf("ip -n %s -batch: %w: %s\nscript:\n%s", ns, err, strings.TrimSpace(out), script)
	}
	return nil
}

// startTracked starts p's command and records it for Close, unless the lab is
// closed.
func (l *Lab) startTracked(p *Proc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("lab is closed")
	}
	if err := p.cmd.Start(); err != nil {
		return err
	}
	l.procs = append(l.procs, p)
	return nil
}

// Close stops every process started in the lab, deletes its namespaces and
// removes its directory. It is idempotent, safe on a partly built lab and
// safe to call concurrently; every call returns the first call's result.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Lab) close() error {
	l.mu.Lock()
	l.closed = true
	procs, namespaces := l.procs, l.namespaces
	l.mu.Unlock()

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), closeTime)
	defer cancel()
	var errs []error
	// Processes other than BIRD first (rhi may withdraw through BIRD on its
	// way out), then BIRD; all at once within each group.
	var birds, others []*Proc
	for _, p := range procs {
		if p.Name == "bird" {
			birds = append(birds, p)
		} else {
			others = append(others, p)
		}
	}
	for _, group := range [][]*Proc{others, birds} {
		errs = append(errs, stopAll(group)...)
	}
	for i := len(namespaces) - 1; i >= 0; i-- {
		if err := deleteNamespace(ctx, namespaces[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(l.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		l.log.WithField("action", "teardown").WithError(err).Warn("lab teardown had errors")
		return fmt.Errorf("close lab %q: %w", l.Name, err)
	}
	l.log.WithField("action", "teardown").Infof("lab removed in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

func stopAll(procs []*Proc) []error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		select {
		case <-p.done:
			// Ended before Close: how is the business of its Wait.
			continue
		default:
		}
		wg.Go(func() { errs[i] = p.Stop() })
	}
	wg.Wait()
	return errs
}

// deleteNamespace kills whatever still runs in ns (commands from Exec, say)
// and deletes it.
func deleteNamespace(ctx context.Context, ns string) error {
	out, err := combined(exec.CommandContext(ctx, "ip", "netns", "pids", ns))
	if err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := parsePid(f); err == nil {
				_ = syscallKill(pid)
			}
		}
	}
	return runIP(ctx, "", "netns", "del", ns)
}

// Bird3Root is the Debian 13 root with bird3 installed that CI builds
// (.ci/run); the environment variable RHI_BIRD3_ROOT names another.
const Bird3Root = "/var/cache/rhi-ci/trixie-bird3"

// Bird3 returns the command that runs BIRD 3 from its Debian root on this
// host (the root's own dynamic loader and libraries), for Options.Bird, or
// an error saying why there is none.
func Bird3() ([]string, error) {
	root := os.Getenv("RHI_BIRD3_ROOT")
	if root == "" {
		root = Bird3Root
	}
	bin := filepath.Join(root, "usr/sbin/bird")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no BIRD 3 here: %w", err)
	}
	return []string{filepath.Join(root, "lib64/ld-linux-x86-64.so.2"), "--library-path",
		filepath.Join(root, "lib/x86_64-linux-gnu") + ":" + filepath.Join(root, "usr/lib/x86_64-linux-gnu"), bin}, nil
}
