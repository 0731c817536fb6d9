package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/rhi-daemon/rhi/internal/ctlsock"
)

// ctlDir is a short private directory for a control socket: a socket's
// path holds at most 107 bytes, and t.TempDir's can be longer.
func ctlDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rhi-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serveControl serves h on a control socket, as the daemon does, until the
// test ends, and returns the socket's path.
func serveControl(t *testing.T, h http.Handler) string {
	t.Helper()
	path := filepath.Join(ctlDir(t), "rhi.sock")
	ln, err := ctlsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

// deadSocket is a control socket path nothing listens on.
func deadSocket(t *testing.T) string {
	return filepath.Join(ctlDir(t), "rhi.sock")
}
