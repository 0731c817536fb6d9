package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Proc is a long-running process inside a lab namespace whose stdout and
// stderr go to files in the host's directory.
type Proc struct {
	Name   string
	Stdout string // path of the file holding its standard output
	Stderr string // path of the file holding its standard error

	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait; read after done is closed

	mu      sync.Mutex
	stopped bool // Stop sent SIGTERM: dying of it is not a failure
}

// Start runs argv inside the host's namespace, with its output captured to
// <Dir>/<name>.stdout and <name>.stderr. The process gets SIGTERM when ctx is
// done (SIGKILL 5 s later), SIGKILL if the calling process dies, and is
// stopped by [Lab.Close]. name must be unique on the host.
func (r *Router) Start(ctx context.Context, name string, argv ...string) (*Proc, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %q in %q: empty command", name, r.NS)
	}
	if name == "" || filepath.Base(name) != name {
		return nil, fmt.Errorf("start %q in %q: name must be a plain file name", name, r.NS)
	}
	p := &Proc{
		Name:   name,
		Stdout: filepath.Join(r.Dir, name+".stdout"),
		Stderr: filepath.Join(r.Dir, name+".stderr"),
		done:   make(chan struct{}),
	}
	// O_EXCL: a second process of the same name would mix two logs.
	stdout, err := os.OpenFile(p.Stdout, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %q in %q: %w", name, r.NS, err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(p.Stderr, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %q in %q: %w", name, r.NS, err)
	}
	defer stderr.Close()

	// ip netns exec execs argv in place, so the pid is argv's own.
	cmd := r.Exec(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, // a terminal's ^C goes to us, and we stop children in order
		// No orphan outlives a killed test binary. Linux ties this to the
		// forking thread, which the Go runtime only retires for goroutines
		// that exit while locked to their thread; nothing here does.
		Pdeathsig: syscall.SIGKILL,
	}
	cmd.Cancel = func() error {
		p.markStopped()
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = stopGrace
	p.cmd = cmd

	// Started under the lab's lock, so that Close either sees the process or
	// has already refused it.
	if err := r.lab.startTracked(p); err != nil {
		return nil, fmt.Errorf("start %q in %q: %w", name, r.NS, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process; os.ErrProcessDone if it has exited.
func (p *Proc) Signal(sig os.Signal) error {
	select {
	case <-p.done:
		return os.ErrProcessDone
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Wait waits for the process to exit and returns how it ended: nil for exit
// status 0 or for the SIGTERM that Stop sent.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.exitErr()
	case <-ctx.Done():
		return fmt.Errorf("wait for %q: %w", p.Name, ctx.Err())
	}
}

// Stop sends SIGTERM, waits up to 5 s, then sends SIGKILL. It returns how the
// process ended (see Wait), or an error if it had to be killed. Safe to call
// more than once and after the process exited.
func (p *Proc) Stop() error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	p.markStopped()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitErr()
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%q did not exit within %s of SIGTERM; killed", p.Name, stopGrace)
	}
}

func (p *Proc) markStopped() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// exitErr is p.err, except that dying of the SIGTERM we sent (or exiting 0
// after it, which exec reports as the context's error) is a clean stop.
func (p *Proc) exitErr() error {
	if p.err == nil {
		return nil
	}
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return nil
			}
		}
		if errors.Is(p.err, context.Canceled) || errors.Is(p.err, context.DeadlineExceeded) {
			return nil
		}
	}
	return fmt.Errorf("%q: %w", p.Name, p.err)
}

// limitedBuffer keeps the first max bytes written and drops the rest, so a
// chatty command cannot exhaust memory.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// combined runs cmd and returns its combined output, bounded to 1 MiB.
func combined(cmd *exec.Cmd) (string, error) {
	out := &limitedBuffer{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, out
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second // a grandchild holding the pipe must not hang us
	}
	err := cmd.Run()
	return out.buf.String(), err
}
