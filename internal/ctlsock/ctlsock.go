// Package ctlsock is the daemon's control socket: the unix socket on which
// `rhi status`, `rhi verify` and `rhi drain` ask the running daemon what it
// is doing (control_socket, /run/rhi/rhi.sock by default).
//
// The daemon side, [Listen], replaces a socket file left by a dead daemon
// only when it is a socket and nobody answers on it. The client side,
// [Client], believes an answer only from a peer the kernel vouches for
// (SO_PEERCRED): root, or the owner of the socket's directory when nobody
// else can write to that directory. Under systemd that directory is the
// unit's RuntimeDirectory, /run/rhi, created for the rhi user with mode
// 0750, so the daemon's own uid is the one trusted; an impostor on the TCP
// status_listen is never asked, and one that binds a socket in a directory
// others can write to (/tmp) is refused unless it is root.
package ctlsock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SocketMode is the socket file's mode: the daemon's user and group (rhi)
// may connect, others may not.
const SocketMode = 0o660

// dirMode is the mode of a directory Listen has to create (outside systemd,
// which creates /run/rhi itself).
const dirMode = 0o750

// staleProbe bounds the connect that tells a live socket from a stale one.
const staleProbe = time.Second

// ErrInUse is returned by Listen when a process answers on the socket.
var ErrInUse = errors.New("another process answers on it (another rhi?)")

// Listen creates the control socket at path. A file already there is
// removed only if it is a socket that refuses connections (left by a dead
// daemon); a live socket is ErrInUse and anything else is an error, never
// removed. The socket gets SocketMode; closing the listener removes it.
func Listen(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	if err := clearStale(path); err != nil {
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	if err := os.Chmod(path, SocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	return ln, nil
}

// clearStale removes the socket file at path if nobody answers on it.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("exists and is not a socket (%s): not removed", fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, staleProbe)
	if err == nil {
		c.Close()
		return ErrInUse
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("cannot tell whether the socket is in use: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket: %w", err)
	}
	return nil
}

// Client asks the daemon over its control socket.
type Client struct {
	Path string
	// Trust decides whether the peer's uid may answer, given the socket's
	// directory; nil means [Trusted]. Tests replace it.
	Trust func(peer uint32, dir fs.FileInfo) error
}

// HTTP returns an HTTP client whose every connection goes to the control
// socket and is checked with Check before a request is sent. URLs take any
// host: "http://rhi/status". Connections are not kept alive.
func (c Client) HTTP() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return c.Dial(ctx)
		},
	}}
}

// Dial connects to the control socket and checks the peer: see Check.
func (c Client) Dial(ctx context.Context) (net.Conn, error) {
	fi, err := os.Lstat(c.Path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%s: not a socket (%s)", c.Path, fi.Mode().Type())
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Path)
	if err != nil {
		return nil, err
	}
	if err := c.Check(conn.(*net.UnixConn)); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Check reads the peer's credentials from the kernel and refuses a peer
// that Trust (by default [Trusted]) does not accept.
func (c Client) Check(conn *net.UnixConn) error {
	peer, err := PeerUID(conn)
	if err != nil {
		return err
	}
	di, err := os.Stat(filepath.Dir(c.Path))
	if err != nil {
		return err
	}
	trust := c.Trust
	if trust == nil {
		trust = Trusted
	}
	if err := trust(peer, di); err != nil {
		return fmt.Errorf("not trusted: %w", err)
	}
	return nil
}

// PeerUID is the uid of the process at the other end of conn, as the
// kernel recorded it when that process connected or listened.
func PeerUID(conn *net.UnixConn) (uint32, error) {
	cred, err := peerCred(conn)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// PeerPID is the pid of the process at the other end of conn, as the
// kernel recorded it when that process connected or listened: for a
// connection Dial made, the daemon that listens (`rhi reload` signals it).
func PeerPID(conn *net.UnixConn) (int, error) {
	cred, err := peerCred(conn)
	if err != nil {
		return 0, err
	}
	return int(cred.Pid), nil
}

// peerCred reads SO_PEERCRED.
func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("reading the peer's credentials: %w", err)
	}
	return cred, nil
}

// Trusted is the default rule: root may answer; so may the owner of the
// socket's directory, provided neither its group nor others can write
// there (then nobody but that owner, and root, can have created the
// socket). /run/rhi is the rhi user's, mode 0750: the daemon is trusted.
func Trusted(peer uint32, dir fs.FileInfo) error {
	if peer == 0 {
		return nil
	}
	st, ok := dir.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("answered by uid %d and the owner of %s is unknown", peer, dir.Name())
	}
	switch {
	case st.Uid != peer:
		return fmt.Errorf("answered by uid %d, which is neither root nor the owner (uid %d) of the directory %q (an impostor?)", peer, st.Uid, dir.Name())
	case dir.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("answered by uid %d in the directory %q, which others can write to (mode %s): only root is trusted there", peer, dir.Name(), dir.Mode().Perm())
	}
	return nil
}
