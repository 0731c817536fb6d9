//go:build integration

package monitoring

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rhi-daemon/rhi/integration/lab"
	"github.com/rhi-daemon/rhi/integration/site"
	"gopkg.in/yaml.v3"
)

// prometheusBin is Debian's prometheus (apt-get install
// --no-install-recommends prometheus, with its service kept stopped: see
// .ci/run).
const prometheusBin = "/usr/bin/prometheus"

// TestPrometheusFiresVIPWithdrawn: a real Prometheus, in the ADC's
// namespace on a random loopback port with a data directory of its own,
// scrapes a running rhi with the job docs/monitoring.md documents (only
// the target changed) and evaluates the shipped rules. While the VIP is
// announced the target is up and no RhiVIPWithdrawn is pending; once its
// upstream goes unhealthy and rhi withdraws it, RhiVIPWithdrawn fires for
// that VIP with the job's labels. Each wait is bounded.
func TestPrometheusFiresVIPWithdrawn(t *testing.T) {
	if _, err := os.Stat(prometheusBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (.ci/run installs it)", prometheusBin, err)
		}
		t.Skipf("%s: %v (Debian: apt-get install --no-install-recommends prometheus; keep its service stopped)", prometheusBin, err)
	}
	job, err := ReadScrapeJob(Doc)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := filepath.Abs(Rules)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	l := lab.ForTest(t, lab.Options{Prefix: "rhi-mon-", DCs: 1})
	bins, err := site.Build(ctx, "rhi-mon-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bins.Remove() })
	vip := site.VIP{Address: "10.0.0.100", Upstreams: []string{"/apisix/upstreams/api"}}
	s, err := site.New(ctx, l.DCs[0], bins, site.Config{VIPs: []site.VIP{vip}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartRHI(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.StopRHI() })

	// The documented job, pointed at the lab's rhi; rules evaluated every
	// second so that only the rules' own `for:` counts.
	job["static_configs"] = []any{map[string]any{"targets": []string{s.StatusAddr}}}
	cfg, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"evaluation_interval": "1s"},
		"rule_files":     []string{rules},
		"scrape_configs": []any{job},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.DCs[0].Dir, "prometheus")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "promtool", "check", "config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, cfg)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(40000))
	prom, err := l.DCs[0].Start(ctx, "prometheus", prometheusBin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prom.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(prom.Stderr)
			t.Logf("prometheus stderr (tail):\n%s", tail(string(b), 3000))
		}
	})
	api := promAPI{ns: l.DCs[0].NS, addr: addr, done: prom.Done()}

	// Up: the first scrape comes within the job's interval.
	wait(t, 2*time.Minute, "the target is up and RhiVIPWithdrawn is loaded", func(ctx context.Context) error {
		v, err := api.query(ctx, `up{job="`+job["job_name"].(string)+`"}`)
		if err != nil {
			return err
		}
		if len(v) != 1 || v[0].Value[1] != "1" {
			return fmt.Errorf("up = %v", v)
		}
		rs, err := api.get(ctx, "/api/v1/rules")
		if err != nil {
			return err
		}
		if !strings.Contains(rs, `"name":"RhiVIPWithdrawn"`) {
			return errors.New("RhiVIPWithdrawn not among the rules")
		}
		return nil
	})
	if a, err := api.alerts(context.Background(), "RhiVIPWithdrawn"); err != nil || len(a) != 0 {
		t.Fatalf("RhiVIPWithdrawn while the VIP is announced: %v %v", a, err)
	}

	// Withdrawn by health: the upstream's nodes go unhealthy.
	start := time.Now()
	if err := s.SetAll("unhealthy", vip.Upstreams...); err != nil {
		t.Fatal(err)
	}
	want := "10.0.0.100/32"
	var fired alert
	wait(t, 4*time.Minute, "RhiVIPWithdrawn fires for "+want, func(ctx context.Context) error {
		as, err := api.alerts(ctx, "RhiVIPWithdrawn")
		if err != nil {
			return err
		}
		for _, a := range as {
			if a.Labels["vip"] == want && a.State == "firing" {
				fired = a
				return nil
			}
		}
		return fmt.Errorf("alerts %v", as)
	})
	if fired.Labels["job"] != job["job_name"] || fired.Labels["instance"] != s.StatusAddr || fired.Labels["severity"] != "warning" {
		t.Errorf("RhiVIPWithdrawn labels %v, want job %v, instance %s, severity warning", fired.Labels, job["job_name"], s.StatusAddr)
	}
	t.Logf("RhiVIPWithdrawn fired %v after the upstream went unhealthy (scrape %v, for: 1m)", time.Since(start).Round(time.Second), job["scrape_interval"])
}

// wait runs check until it succeeds, failing the test after limit.
func wait(t *testing.T, limit time.Duration, what string, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := lab.Eventually(ctx, 0, time.Second, check); err != nil {
		t.Fatalf("%s: not within %v: %v", what, limit, err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// promAPI asks the Prometheus in namespace ns on addr.
type promAPI struct {
	ns, addr string
	done     <-chan struct{} // closed when Prometheus exits
}

// get fetches path, bounded by ctx (5 s without a deadline) and 16 MiB.
func (p promAPI) get(ctx context.Context, path string) (string, error) {
	select {
	case <-p.done:
		return "", lab.Stop(errors.New("prometheus exited"))
	default:
	}
	c, err := site.DialIn(p.ns, p.addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > 5*time.Second {
		dl = time.Now().Add(5 * time.Second)
	}
	c.SetDeadline(dl)
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: prometheus\r\n\r\n", path); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, tail(string(body), 300))
	}
	return string(body), err
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query and returns its vector.
func (p promAPI) query(ctx context.Context, q string) ([]sample, error) {
	body, err := p.get(ctx, "/api/v1/query?query="+url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("query %q: %v %s", q, err, tail(body, 300))
	}
	return r.Data.Result, nil
}

type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending or firing
}

// alerts lists the active (pending or firing) alerts of that name.
func (p promAPI) alerts(ctx context.Context, name string) ([]alert, error) {
	body, err := p.get(ctx, "/api/v1/alerts")
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("alerts: %v %s", err, tail(body, 300))
	}
	var out []alert
	for _, a := range r.Data.Alerts {
		if a.Labels["alertname"] == name {
			out = append(out, a)
		}
	}
	return out, nil
}
