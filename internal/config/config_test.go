package config

import (
	"errors"
	"flag"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rhi-daemon/rhi/internal/apisix"
	"github.com/rhi-daemon/rhi/internal/health"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// apisixKeys is the rule rhi reads upstream keys by: the tests read
// configurations as rhi does.
var apisixKeys KeyRule = apisix.UpstreamKey

// cmpConfig compares netip values by ==, which is what equality means for
// them (cmp refuses their unexported fields).
// cmpConfig compares prefixes by value and leaves out the parser's notes
// (warnings at a line: a file and its Format differ there by design).
var cmpConfig = cmp.Options{
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmpopts.IgnoreUnexported(Config{}),
}

func TestSeedExample(t *testing.T) {
	got, err := Load("testdata/seed.yaml", apisixKeys)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &Config{
		PollInterval:     3 * time.Second,
		ControlURL:       "http://127.0.0.1:9090",
		Timeout:          5 * time.Second,
		PollMode:         "auto",
		FastPollInterval: 100 * time.Millisecond,
		PollBudget:       1,
		Interface:        "rhi0",
		MainLog:          "/var/log/rhi/main.log",
		ErrorLog:         "/var/log/rhi/error.log",
		LogFormat:        "text",
		FailurePolicy: FailurePolicy{
			ControlAPIUnreachable: Withdraw,
			MaxFailedPolls:        3,
			NoChecker:             "healthy",
		},
		Bird:          Bird{Socket: "/run/bird/bird.ctl", Timeout: 2 * time.Second},
		Rise:          1,
		Fall:          1,
		OnShutdown:    "keep",
		StatusListen:  "127.0.0.1:9711",
		DrainFile:     "/var/lib/rhi/drain",
		DrainGrace:    5 * time.Second,
		StateFile:     "/var/lib/rhi/owned",
		Unmanaged:     "report",
		ControlSocket: "/run/rhi/rhi.sock",
		Degraded:      Degraded{Interface: "rhi1"},
		LastResort:    LastResort{Interface: "rhi2"},
		FailOpen:      FailOpen{Hold: 2 * time.Second},
		VIPs: []VIP{
			{
				Address:     netip.MustParsePrefix("10.0.0.100/32"),
				Description: "Production API",
				Upstreams:   health.Upstreams("/apisix/upstreams/api"),
				Condition:   All, Rise: 1, Fall: 1, DrainGrace: 5 * time.Second,
			},
			{
				Address:     netip.MustParsePrefix("10.0.0.101/32"),
				Description: "Admin portal",
				Upstreams:   health.Upstreams("/apisix/upstreams/auth", "/apisix/upstreams/admin"),
				Condition:   All, Rise: 1, Fall: 1, DrainGrace: 5 * time.Second,
			},
			{
				Address:     netip.MustParsePrefix("10.0.0.102/32"),
				Description: "Public app",
				Upstreams:   health.Upstreams("/apisix/upstreams/app-primary", "/apisix/upstreams/app-reserve"),
				Condition:   Any, Rise: 1, Fall: 1, DrainGrace: 5 * time.Second,
			},
		},
	}
	if diff := cmp.Diff(want, got, cmpConfig); diff != "" {
		t.Errorf("seed config (-want +got):\n%s", diff)
	}
}

func TestDefault(t *testing.T) {
	want := Config{
		PollInterval:     3 * time.Second,
		ControlURL:       "http://127.0.0.1:9090",
		Timeout:          5 * time.Second,
		PollMode:         "auto",
		FastPollInterval: 100 * time.Millisecond,
		PollBudget:       1,
		Interface:        "rhi0",
		LogFormat:        "text",
		FailurePolicy:    FailurePolicy{ControlAPIUnreachable: Withdraw, MaxFailedPolls: 3, NoChecker: "healthy"},
		Bird:             Bird{Socket: "/run/bird/bird.ctl", Timeout: 2 * time.Second},
		Rise:             1,
		Fall:             1,
		OnShutdown:       "keep",
		StatusListen:     "127.0.0.1:9711",
		DrainFile:        "/var/lib/rhi/drain",
		DrainGrace:       5 * time.Second,
		StateFile:        "/var/lib/rhi/owned",
		Unmanaged:        "report",
		ControlSocket:    "/run/rhi/rhi.sock",
		Degraded:         Degraded{Interface: "rhi1"},
		LastResort:       LastResort{Interface: "rhi2"},
		FailOpen:         FailOpen{Hold: 2 * time.Second},
	}
	if diff := cmp.Diff(want, Default(), cmpConfig); diff != "" {
		t.Errorf("Default() (-want +got):\n%s", diff)
	}
	got, err := Parse("empty.yaml", nil, apisixKeys)
	if err != nil {
		t.Fatalf("Parse(empty): %v", err)
	}
	if diff := cmp.Diff(want, *got, cmpConfig); diff != "" {
		t.Errorf("Parse(empty) (-want +got):\n%s", diff)
	}
}

// TestValid loads each valid file, compares the effective config printed
// by Format with its golden file, and reads that output back.
func TestValid(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/valid/*.yaml")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			c, err := Load(file, apisixKeys)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			out, err := Format(c)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".golden", string(out))
			back, err := Parse("formatted", out, apisixKeys)
			if err != nil {
				t.Fatalf("Parse(Format(c)): %v\n%s", err, out)
			}
			if diff := cmp.Diff(c, back, cmpConfig); diff != "" {
				t.Errorf("round trip through Format (-loaded +reparsed):\n%s", diff)
			}
		})
	}
}

// TestInvalid parses each invalid file and compares every reported problem
// with the golden .err file next to it.
func TestInvalid(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 25 {
		t.Fatalf("only %d testdata/invalid/*.yaml files", len(files))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(name, data, apisixKeys)
			if err == nil {
				t.Fatalf("Parse succeeded, want an error; got %+v", c)
			}
			if c != nil {
				t.Errorf("Parse returned a config along with the error")
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %T %v is not a non-empty Errors", err, err)
			}
			for _, p := range errs {
				if p.File != name {
					t.Errorf("problem %q names file %q, want %q", p, p.File, name)
				}
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".err", err.Error()+"\n")
		})
	}
}

// TestGoldensHaveInputs catches golden files left behind by a renamed or
// deleted case.
func TestGoldensHaveInputs(t *testing.T) {
	for _, pattern := range []string{"testdata/invalid/*.err", "testdata/valid/*.golden"} {
		goldens, _ := filepath.Glob(pattern)
		for _, g := range goldens {
			in := strings.TrimSuffix(g, filepath.Ext(g)) + ".yaml"
			if _, err := os.Stat(in); err != nil {
				t.Errorf("golden %s has no input: %v", g, err)
			}
		}
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// TestProblems checks the structured form of a file with several problems,
// which callers reach through errors.As.
func TestProblems(t *testing.T) {
	data, err := os.ReadFile("testdata/invalid/multiple_errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("rhi.yaml", data, apisixKeys)
	var got Errors
	if !errors.As(err, &got) {
		t.Fatalf("error %T is not Errors: %v", err, err)
	}
	want := Errors{
		{File: "rhi.yaml", Line: 1, Path: "apisix_poll_interval", Msg: "must be positive", Got: "0s"},
		{File: "rhi.yaml", Line: 15, Path: "vips[1].upstreams[0]", Msg: `unknown resource type "upstream"`, Got: "/apisix/upstream/auth", Allowed: "upstreams, routes, services, stream_routes"},
		{File: "rhi.yaml", Line: 18, Path: "vips[2].condition", Msg: "unknown value", Got: "most", Allowed: "all, any"},
		{File: "rhi.yaml", Line: 19, Path: "vips[3].address", Msg: "same address as vips[0] at line 9", Got: "10.0.0.100"},
		{File: "rhi.yaml", Line: 20, Path: "vips[3].upstreams", Msg: "must list at least one upstream"},
		{File: "rhi.yaml", Line: 21, Path: "vips[3].condtion", Msg: "unknown key", Allowed: "address, description, upstreams, condition, rise, fall, min_healthy, probe, degraded, drain_grace"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
		want string
	}{
		{"spec example", Problem{File: "rhi.yaml", Line: 18, Path: "vips[2].condition", Msg: "unknown value", Got: "most", Allowed: "all, any"},
			`rhi.yaml:18: vips[2].condition: unknown value (got "most"; allowed: all, any)`},
		{"no value", Problem{File: "rhi.yaml", Line: 3, Path: "vips[0].address", Msg: "required key missing"},
			`rhi.yaml:3: vips[0].address: required key missing`},
		{"only allowed", Problem{File: "f", Line: 2, Path: "x", Msg: "unknown key", Allowed: "a, b"},
			`f:2: x: unknown key (allowed: a, b)`},
		{"no line", Problem{File: "f", Msg: "invalid YAML: control characters are not allowed"},
			`f: invalid YAML: control characters are not allowed`},
		{"no file", Problem{Line: 4, Path: "interface", Msg: "m", Got: "a\tb"},
			`4: interface: m (got "a\tb")`},
		{"nothing but the message", Problem{Msg: "m"}, `m`},
		{"long value cut", Problem{Path: "p", Msg: "m", Got: strings.Repeat("é", 100)},
			`p: m (got "` + strings.Repeat("é", 80) + `…")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	errs := Errors{tests[0].p, tests[1].p}
	if got, want := errs.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("Errors.Error() = %q, want %q", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "missing.yaml"), apisixKeys)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}

	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big, apisixKeys)
	var errs Errors
	if err == nil || errors.As(err, &errs) || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("Load(too big) = %v, want a size error", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("interface: a/b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad, apisixKeys)
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].File != bad || errs[0].Line != 1 {
		t.Errorf("Load(bad) = %#v, want one problem naming %s line 1", err, bad)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	c := Default()
	c.Bird.Protocols = []string{"p1"}
	c.StatusListen = ""
	c.VIPs = []VIP{
		{Address: netip.MustParsePrefix("2001:db8::1/128"), Description: "quote \" and: colon", Upstreams: health.Upstreams("/routes/1"), Condition: Any, Rise: 2, Fall: 7},
		{Address: netip.MustParsePrefix("192.0.2.1/32"), Description: "123", Upstreams: health.Upstreams("/a/b/services/x", "/upstreams/y"), Condition: All, Rise: 1, Fall: 1},
	}
	// Descriptions are free text: each of these must come back unchanged.
	for i, d := range []string{"null", "~", "line 1\nline 2\n", "  lead and trail  ", "# not a comment", "- x", "*a", "\x7f\u0085\ufeff", "yes"} {
		c.VIPs = append(c.VIPs, VIP{Address: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 32), Description: d, Upstreams: health.Upstreams("/upstreams/z"), Condition: All, Rise: 1, Fall: 1})
	}
	out, err := Format(&c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("formatted", out, apisixKeys)
	if err != nil {
		t.Fatalf("Parse(Format(c)): %v\n%s", err, out)
	}
	if diff := cmp.Diff(&c, back, cmpConfig); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\nformatted:\n%s", diff, out)
	}
}
