package site

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rhi-daemon/rhi/internal/inns"
)

// DialIn connects to addr over TCP from inside the network namespace ns.
// The socket keeps the namespace it was made in, so only the dial needs the
// switch.
func DialIn(ns, addr string) (net.Conn, error) {
	var c net.Conn
	err := inns.DoNamed(ns, func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	})
	if err != nil && c != nil {
		c.Close()
		return nil, err
	}
	return c, err
}

// Get fetches path from rhi's status listener on the site (/metrics,
// /status, /healthz) and returns the status code and body.
func (s *Site) Get(ctx context.Context, path string) (int, string, error) {
	c, err := DialIn(s.DC.NS, s.StatusAddr)
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
