package ctlsock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/internal/asuser"
)

// serve answers "ok" on ln until the test ends and counts the requests.
func serve(t *testing.T, ln net.Listener) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fmt.Fprint(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &n
}

func get(c Client) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://rhi/status", nil)
	resp, err := c.HTTP().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestListenServesAndTrustsItsOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "rhi.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket file: %v, %v; want a socket with mode %o", fi.Mode(), err, SocketMode)
	}
	var seen uint32 = 1 << 31
	c := Client{Path: path, Trust: func(peer uint32, dir fs.FileInfo) error {
		seen = peer
		return Trusted(peer, dir)
	}}
	if body, err := get(c); err != nil || body != "ok" {
		t.Fatalf("get = %q, %v", body, err)
	}
	if seen != uint32(os.Getuid()) {
		t.Errorf("peer uid read as %d, want ours, %d", seen, os.Getuid())
	}
}

func TestClientRefusesAnotherUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	n := serve(t, ln)
	// The daemon is expected to run as another user than this process.
	other := uint32(os.Getuid()) + 1
	c := Client{Path: path, Trust: func(peer uint32, dir fs.FileInfo) error {
		if peer != other {
			return fmt.Errorf("answered by uid %d, want %d", peer, other)
		}
		return nil
	}}
	_, err = get(c)
	if err == nil || !strings.Contains(err.Error(), "not trusted") || !strings.Contains(err.Error(), fmt.Sprint(os.Getuid())) {
		t.Fatalf("get = %v, want a refusal naming uid %d", err, os.Getuid())
	}
	if n.Load() != 0 {
		t.Errorf("%d requests reached the untrusted peer, want 0", n.Load())
	}
}

func TestClientRefusesSocketInSharedDirectory(t *testing.T) {
	if os.Getuid() == 0 {
		// Root is trusted anywhere: run this test again as nobody.
		dir, err := os.MkdirTemp("", "ctlsock-shared-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o755)
		tmp := filepath.Join(dir, "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(tmp, asuser.Nobody, asuser.Nobody); err != nil {
			t.Fatal(err)
		}
		out, err := asuser.Run(t.Context(), dir, t.Name(), asuser.Nobody, asuser.Nobody, "TMPDIR="+tmp)
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o1777) // like /tmp, whatever the umask
	path := filepath.Join(dir, "rhi.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	n := serve(t, ln)
	if _, err := get(Client{Path: path}); err == nil || !strings.Contains(err.Error(), "others can write") {
		t.Fatalf("get = %v, want a refusal (directory others can write to)", err)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests reached the untrusted peer, want 0", n.Load())
	}
}

// TestClientRefusesImpostorUser runs a server as nobody (uid 65534) in a
// root-owned directory everybody can write to, like /tmp: the default rule
// refuses it. Needs root to change uid.
func TestClientRefusesImpostorUser(t *testing.T) {
	if os.Getenv("CTLSOCK_IMPOSTOR") != "" {
		impostor(os.Getenv("CTLSOCK_IMPOSTOR"))
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	// t.TempDir's parents are private to root: nobody could not run the
	// test binary from there.
	dir, err := os.MkdirTemp("", "ctlsock-impostor-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o1777)
	bin := filepath.Join(dir, "ctlsock.test")
	if data, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	path := filepath.Join(dir, "rhi.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run=^TestClientRefusesImpostorUser$")
	cmd.Env = append(os.Environ(), "CTLSOCK_IMPOSTOR="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The socket file appears at bind, before listen: wait for the
	// impostor's own word that it is accepting.
	for {
		if _, err := os.Lstat(path + ".ready"); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the impostor did not bind its socket")
		case <-time.After(20 * time.Millisecond):
		}
	}
	_, err = get(Client{Path: path})
	if err == nil || !strings.Contains(err.Error(), "answered by uid 65534") {
		t.Fatalf("get = %v, want a refusal of uid 65534", err)
	}
}

// impostor serves "ok" on path until killed; path+".ready" appears once
// it is listening.
func impostor(path string) {
	ln, err := net.Listen("unix", path)
	if err == nil {
		err = os.WriteFile(path+".ready", nil, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.sock")
	old, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	old.SetUnlinkOnClose(false)
	old.Close() // a dead daemon's socket file stays behind
	ln, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	serve(t, ln)
	if body, err := get(Client{Path: path}); err != nil || body != "ok" {
		t.Fatalf("get = %q, %v", body, err)
	}
}

func TestListenLeavesALiveSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rhi.sock")
	live, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, live)
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen = %v, want ErrInUse", err)
	}
	if body, err := get(Client{Path: path}); err != nil || body != "ok" {
		t.Fatalf("the first daemon no longer answers: %q, %v", body, err)
	}
}

func TestListenLeavesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.sock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.sock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{target, link, fifo} {
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Errorf("Listen(%s) = %v, want a refusal", filepath.Base(path), err)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(path), err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("target = %q", b)
	}
	if _, err := get(Client{Path: link}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("client through a link: %v, want a refusal", err)
	}
}

// fakeDir is a directory's FileInfo with a chosen owner and mode.
type fakeDir struct {
	fs.FileInfo
	uid  uint32
	mode fs.FileMode
}

func (f fakeDir) Name() string       { return "rhi" }
func (f fakeDir) Mode() fs.FileMode  { return fs.ModeDir | f.mode }
func (f fakeDir) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }
func (f fakeDir) ModTime() time.Time { return time.Time{} }

func TestTrusted(t *testing.T) {
	tests := []struct {
		name string
		peer uint32
		dir  fakeDir
		ok   bool
	}{
		{"root anywhere", 0, fakeDir{uid: 999, mode: 0o1777}, true},
		{"the owner of /run/rhi", 999, fakeDir{uid: 999, mode: 0o750}, true},
		{"another user", 1000, fakeDir{uid: 999, mode: 0o750}, false},
		{"owner of a group-writable directory", 999, fakeDir{uid: 999, mode: 0o770}, false},
		{"a user in /tmp", 1000, fakeDir{uid: 0, mode: 0o1777}, false},
		{"the owner of a world-writable directory", 1000, fakeDir{uid: 1000, mode: 0o777}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Trusted(tt.peer, tt.dir); (err == nil) != tt.ok {
				t.Errorf("Trusted(%d, uid %d mode %o) = %v, want ok=%v", tt.peer, tt.dir.uid, tt.dir.mode, err, tt.ok)
			}
		})
	}
}

// TestPeerPIDIsTheListener: the pid read from a connection Dial made is the
// process that listens, here a child, not ours (`rhi reload` signals it).
func TestPeerPIDIsTheListener(t *testing.T) {
	if p := os.Getenv("CTLSOCK_LISTENER"); p != "" {
		ln, err := Listen(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		http.Serve(ln, http.NotFoundHandler())
		return
	}
	path := filepath.Join(t.TempDir(), "rhi.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPeerPIDIsTheListener$")
	cmd.Env = append(os.Environ(), "CTLSOCK_LISTENER="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var conn net.Conn
	for {
		var err error
		if conn, err = (Client{Path: path}).Dial(ctx); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the child did not listen: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer conn.Close()
	pid, err := PeerPID(conn.(*net.UnixConn))
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("PeerPID = %d, %v; want the child's, %d (ours is %d)", pid, err, cmd.Process.Pid, os.Getpid())
	}
}
