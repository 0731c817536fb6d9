package probespec

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func good() Spec {
	s := Defaults()
	s.URL = "http://127.0.0.1:9080/healthz"
	s.Host = "api.example.com"
	return s
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Spec)
		want []string // FieldError.Error() of each problem
	}{
		{"good", func(*Spec) {}, nil},
		{"https with everything", func(s *Spec) {
			s.URL, s.TLSServerName, s.InsecureSkipVerify = "https://[::1]:9443/ready?x=1", "api.example.com", true
		}, nil},
		{"host with port", func(s *Spec) { s.Host = "api.example.com:8443" }, nil},
		{"host ipv6", func(s *Spec) { s.Host = "[2001:db8::1]:80" }, nil},
		{"no host header", func(s *Spec) { s.Host = "" }, nil},
		{"missing url", func(s *Spec) { s.URL = "" }, []string{
			`url: missing (allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"ftp", func(s *Spec) { s.URL = "ftp://127.0.0.1/x" }, []string{
			`url: scheme must be http or https (got "ftp://127.0.0.1/x"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"user info masked", func(s *Spec) { s.URL = "http://admin:s3cret@127.0.0.1:9080/healthz" }, []string{
			`url: must not have user info (sent in clear to every hop; rhi has no place for secrets) (got "http://xxxxx@127.0.0.1:9080/healthz"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"unparsable with user info masked", func(s *Spec) { s.URL = "http://admin:s3cret@[::1/x" }, []string{
			`url: not a URL (got "http://xxxxx@[::1/x"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"no host in url", func(s *Spec) { s.URL = "http:///healthz" }, []string{
			`url: no host (got "http:///healthz"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"fragment", func(s *Spec) { s.URL = "http://127.0.0.1/x#y" }, []string{
			`url: must not have a fragment (it is never sent) (got "http://127.0.0.1/x#y"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`}},
		{"bad port", func(s *Spec) { s.URL = "http://127.0.0.1:70000/" }, []string{
			`url: bad port (got "http://127.0.0.1:70000/"; allowed: 1-65535)`}},
		{"bad host header", func(s *Spec) { s.Host = "api example.com" }, []string{
			`host: not a host name or address, with an optional port (got "api example.com"; allowed: e.g. api.example.com)`}},
		{"host header with path", func(s *Spec) { s.Host = "api.example.com/x" }, []string{
			`host: not a host name or address, with an optional port (got "api.example.com/x"; allowed: e.g. api.example.com)`}},
		{"empty expect_status", func(s *Spec) { s.ExpectStatus = []int{} }, []string{
			`expect_status: empty: leave the key out for the default [200] (allowed: HTTP status codes 100-599)`}},
		{"statuses out of range and repeated", func(s *Spec) { s.ExpectStatus = []int{200, 99, 600, 204, 200} }, []string{
			`expect_status[1]: not an HTTP status (got "99"; allowed: 100-599)`,
			`expect_status[2]: not an HTTP status (got "600"; allowed: 100-599)`,
			`expect_status[4]: repeated, first at expect_status[0] (got "200")`}},
		{"boundary statuses", func(s *Spec) { s.ExpectStatus = []int{100, 599} }, nil},
		{"zero timeout", func(s *Spec) { s.Timeout = 0 }, []string{`timeout: must be positive (got "0s"; allowed: e.g. 1s)`}},
		{"negative timeout", func(s *Spec) { s.Timeout = -time.Second }, []string{`timeout: must be positive (got "-1s"; allowed: e.g. 1s)`}},
		{"tls_server_name with http", func(s *Spec) { s.TLSServerName = "api.example.com" }, []string{
			`tls_server_name: only for an https url (got "api.example.com")`}},
		{"bad tls_server_name", func(s *Spec) { s.URL, s.TLSServerName = "https://127.0.0.1/", "api.example.com:443" }, []string{
			`tls_server_name: not a host name (got "api.example.com:443"; allowed: e.g. api.example.com)`}},
		{"insecure with http", func(s *Spec) { s.InsecureSkipVerify = true }, []string{
			`insecure_skip_verify: only for an https url (got "true")`}},
		{"everything wrong at once", func(s *Spec) { *s = Spec{URL: "gopher://x", Host: "-bad-", ExpectStatus: []int{1}} }, []string{
			`url: scheme must be http or https (got "gopher://x"; allowed: http:// or https:// URL, e.g. http://127.0.0.1:9080/healthz)`,
			`host: not a host name or address, with an optional port (got "-bad-"; allowed: e.g. api.example.com)`,
			`expect_status[0]: not an HTTP status (got "1"; allowed: 100-599)`,
			`timeout: must be positive (got "0s"; allowed: e.g. 1s)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.edit(&s)
			var got []string
			for _, e := range Validate(s) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate(%+v) (-want +got):\n%s", s, diff)
			}
		})
	}
}

func TestValidateNeverShowsPassword(t *testing.T) {
	for _, raw := range []string{
		"http://u:hunter2@127.0.0.1/", "https://hunter2@h/", "ftp://u:hunter2@h/", "http://u:hunter2@[::1/x",
		"u:hunter2@h/x", "http://u:hunter2@h:99999/",
	} {
		s := good()
		s.URL = raw
		errs := Validate(s)
		if len(errs) == 0 {
			t.Errorf("Validate(url %q) = no problems, want one", raw)
		}
		for _, e := range errs {
			if strings.Contains(e.Error(), "hunter2") {
				t.Errorf("Validate(url %q): %q shows the password", raw, e.Error())
			}
		}
	}
}

func TestWarnings(t *testing.T) {
	s := good()
	if w := Warnings(s); w != nil {
		t.Errorf("Warnings(no insecure) = %v, want none", w)
	}
	s.URL, s.InsecureSkipVerify = "https://127.0.0.1:9443/", true
	w := Warnings(s)
	if len(w) != 1 || w[0].Path() != "insecure_skip_verify" || !strings.Contains(w[0].Msg, "not checked") {
		t.Errorf("Warnings(insecure) = %v, want one about insecure_skip_verify", w)
	}
	if errs := Validate(s); errs != nil {
		t.Errorf("Validate(insecure https) = %v, want valid (a warning only)", errs)
	}
}

func TestMask(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1/":             "http://127.0.0.1/",
		"http://u:p@h/a@b":              "http://xxxxx@h/a@b",
		"http://u@h":                    "http://xxxxx@h",
		"http://u:p@x@h?q=a@b":          "http://xxxxx@h?q=a@b",
		"http://h/path?email=a@b.c#x@y": "http://h/path?email=a@b.c#x@y",
	} {
		if got := Mask(raw); got != want {
			t.Errorf("Mask(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestSpecEqual(t *testing.T) {
	a := good()
	edits := map[string]func(*Spec){
		"url":      func(s *Spec) { s.URL += "x" },
		"host":     func(s *Spec) { s.Host = "b.example.com" },
		"status":   func(s *Spec) { s.ExpectStatus = []int{200, 204} },
		"timeout":  func(s *Spec) { s.Timeout++ },
		"sni":      func(s *Spec) { s.TLSServerName = "x" },
		"insecure": func(s *Spec) { s.InsecureSkipVerify = true },
	}
	b := good()
	if !a.Equal(b) {
		t.Errorf("%+v.Equal(%+v) = false, want true", a, b)
	}
	for name, edit := range edits {
		b := good()
		edit(&b)
		if a.Equal(b) || b.Equal(a) {
			t.Errorf("%s changed: Equal = true, want false", name)
		}
	}
}

func TestSpecString(t *testing.T) {
	s := good()
	s.URL = "http://u:p@127.0.0.1:9080/healthz"
	if got, want := s.String(), "GET http://xxxxx@127.0.0.1:9080/healthz (host api.example.com)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
