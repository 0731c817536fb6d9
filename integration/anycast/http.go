package anycast

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/vishvananda/netns"
)

// dialIn connects to addr from inside the network namespace ns. The socket
// keeps the namespace it was made in, so only the dial needs the switch.
func dialIn(ns, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The thread goes back to its namespace and to the scheduler
		// afterwards. Letting it die instead would be worse than it looks:
		// the lab starts its processes with Pdeathsig, which fires when the
		// *thread* that forked them exits, and Go reuses threads.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("current netns: %w", err)}
			return
		}
		defer orig.Close()
		h, err := netns.GetFromName(ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("netns %q: %w", ns, err)}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("enter netns %q: %w", ns, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if rerr := netns.Set(orig); rerr != nil {
			// Stuck in the lab's namespace: let the thread die with us
			// rather than run other goroutines there.
			if c != nil {
				c.Close()
			}
			ch <- result{err: fmt.Errorf("return from netns %q: %w", ns, rerr)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Get fetches path from rhi's status listener on the site (/metrics,
// /status, /healthz) and returns the status code and body.
func (s *Site) Get(ctx context.Context, path string) (int, string, error) {
	c, err := dialIn(s.DC.NS, s.StatusAddr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: rhi\r\n\r\n", path); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(body), err
}
