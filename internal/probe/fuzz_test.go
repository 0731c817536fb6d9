package probe

import (
	"strings"
	"testing"
	"time"
)

// FuzzValidate: any spec gets an answer, never a panic, and a password in
// the URL never shows in it.
func FuzzValidate(f *testing.F) {
	f.Add("http://127.0.0.1:9080/healthz", "api.example.com", 200, int64(time.Second), "", false)
	f.Add("https://u:p@[::1]:9443/x?y#z", "[::1]:80", 600, int64(0), "api.example.com", true)
	f.Add("http://u:p@[::1/x", "-x-", 99, int64(-1), "a:1", true)
	f.Fuzz(func(t *testing.T, url, host string, status int, timeout int64, sni string, insecure bool) {
		s := Spec{URL: url, Host: host, ExpectStatus: []int{status}, Timeout: time.Duration(timeout), TLSServerName: sni, InsecureSkipVerify: insecure}
		errs := Validate(s)
		_ = Warnings(s)
		const secret = "hunter2secret"
		s.URL = "http://u:" + secret + "@" + url
		for _, e := range Validate(s) {
			if strings.Contains(e.Error(), secret) {
				t.Errorf("Validate(url %q): %q shows the password", s.URL, e.Error())
			}
		}
		for _, e := range errs {
			if e.Key == "" || e.Msg == "" {
				t.Errorf("Validate(%+v): problem without key or message: %+v", s, e)
			}
		}
	})
}
