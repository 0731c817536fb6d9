package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rhi-daemon/rhi/internal/status"
)

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, ünïcödé ✓", "plain text, ünïcödé ✓"},
		{"line 1\nline 2\r\n\tend", `line 1\nline 2\r\n\tend`},
		{"\x1b[31mred\x1b[0m\x07", `\x1b[31mred\x1b[0m\x07`},
		{"del\x7f c1\u009b[2J", `del\x7f c1\u009b[2J`},
		{"bidi \u202egnp.exe\u202c zw\u200b", `bidi \u202egnp.exe\u202c zw\u200b`},
		{"sep\u2028par\u2029", `sep\u2028par\u2029`},
		{"tag \U000e0041", `tag \U000e0041`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// unsafeBytes reports the first thing in s a terminal would act on: a
// control character other than the newline, DEL, a C1 control, a format
// character, a line separator, or a byte that is not UTF-8.
func unsafeBytes(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (r != '\n' && unsafeRune(r)) {
			return s[i : i+n]
		}
		i += n
	}
	return ""
}

// hostileStatus is what an impostor or a hostile upstream name could put in
// the status: terminal sequences, multi-line errors, bidi overrides.
func hostileStatus() status.Status {
	s := statusSample()
	s.Interface.Error = "netlink: \x1b]0;owned\x07 failed"
	s.ControlAPI.URL = "http://127.0.0.1:9090/\x1b[2J"
	s.Bird.Protocols[0].Name = "peer\u202e4"
	s.Interface.Foreign = []string{"192.0.2.7/32\r10.0.0.1/32 FAKE"}
	s.VIPs[1].Bird.Problem = "not exported\nINJECTED second line"
	s.VIPs[1].Upstreams[0].Error = "GET /v1/healthcheck/upstreams/auth: HTTP 502:\n<html>\n<body>INJECTED</body>\x1b[1A\u009b2K@@BAD@@"
	s.VIPs[2].Upstreams[0].Key = "/apisix/routes/web\ttab\x7f"
	return s
}

func TestStatusPrintsNoControlCharacters(t *testing.T) {
	body, err := json.MarshalIndent(hostileStatus(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Bytes that are not UTF-8, inside a string: JSON decoders take them.
	body = bytes.Replace(body, []byte("@@BAD@@"), []byte("\xff\xc2"), 1)
	socket := serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	cfg := filepath.Join(t.TempDir(), "rhi.yaml")
	if err := os.WriteFile(cfg, []byte(`control_socket: "`+socket+`"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	if code := run([]string{"status", "--config", cfg}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if u := unsafeBytes(text); u != "" {
		t.Errorf("rhi status printed %q raw:\n%s", u, text)
	}
	// One table line per VIP, whatever the errors hold; the errors below
	// the table take one line each.
	lines := strings.Split(text, "\n")
	for _, v := range hostileStatus().VIPs {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, v.Address+" ") || strings.HasPrefix(l, v.Address+":") {
				n++
			}
		}
		if want := 1 + len(v.Upstreams) - countEmpty(v.Upstreams) + disagrees(v); n != want {
			t.Errorf("%s starts %d lines, want %d (its table row and one per error)", v.Address, n, want)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "INJECTED") || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "10.0.0.1/32 FAKE") {
			t.Errorf("a line starts with injected text: %q", l)
		}
	}
	// The decoder reads bytes that are not UTF-8 as U+FFFD, which is safe.
	if !strings.Contains(text, `HTTP 502:\n<html>\n<body>INJECTED</body>\x1b[1A\u009b2K`+"\ufffd\ufffd\n") {
		t.Errorf("the upstream error is not shown escaped on one line:\n%s", text)
	}

	out.Reset()
	if code := run([]string{"status", "--config", cfg, "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, errb.String())
	}
	if u := unsafeBytes(out.String()); u != "" {
		t.Errorf("rhi status --json printed %q raw", u)
	}
	var got, want status.Status
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json output does not decode: %v", err)
	}
	json.Unmarshal(body, &want)
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if diff := cmp.Diff(string(w), string(g)); diff != "" {
		t.Errorf("--json output means something else than the daemon's (-daemon +printed):\n%s", diff)
	}
}

func countEmpty(us []status.UpstreamStatus) int {
	n := 0
	for _, u := range us {
		if u.Error == "" {
			n++
		}
	}
	return n
}

func disagrees(v status.VIPStatus) int {
	if v.Bird != nil && !v.Bird.Agrees && !v.Bird.Stale {
		return 1
	}
	return 0
}
