package lab

import "testing"

func TestOwner(t *testing.T) {
	tests := []struct {
		desc, name, prefix string
		wantPid            int
		wantOK             bool
	}{
		{"namespace", "rhi-1234-0badcafe-dc1", "rhi-", 1234, true},
		{"directory", "rhi-1234-0badcafe", "rhi-", 1234, true},
		{"other prefix", "rhi-1234-0badcafe-dc1", "rhi-demo-", 0, false},
		{"longer prefix of another lab", "rhi-demo-1234-0badcafe", "rhi-", 0, false},
		{"not a lab", "rhi-web", "rhi-", 0, false},
		{"short random", "rhi-1234-cafe-dc1", "rhi-", 0, false},
		{"random not hex", "rhi-1234-0badcafz-dc1", "rhi-", 0, false},
		{"pid with sign", "rhi-+1234-0badcafe", "rhi-", 0, false},
		{"pid with zeros", "rhi-01234-0badcafe", "rhi-", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pid, ok := owner(tc.name, tc.prefix)
			if pid != tc.wantPid || ok != tc.wantOK {
				t.Errorf("owner(%q, %q) = %d, %v; want %d, %v", tc.name, tc.prefix, pid, ok, tc.wantPid, tc.wantOK)
			}
		})
	}
}

func TestValidPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		want   bool
	}{
		{"rhi-", true},
		{"rhi-demo.1_", true},
		{"", false},
		{"rhi/", false},
		{"rhi ", false},
		{"rhi\"", false},
	}
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			if got := validPrefix(tc.prefix); got != tc.want {
				t.Errorf("validPrefix(%q) = %v, want %v", tc.prefix, got, tc.want)
			}
		})
	}
}

func TestLimitedBuffer(t *testing.T) {
	b := &limitedBuffer{max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil (drop silently)", s, n, err, len(s))
		}
	}
	if got := b.buf.String(); got != "abcde" {
		t.Errorf("kept %q, want %q", got, "abcde")
	}
}
