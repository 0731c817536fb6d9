//go:build integration

package monitoring

import (
	"os"
	"strings"
	"testing"
)

// TestScrapeJobMatchesRules: the documented job is named as the shipped
// RhiDown rule selects it, and scrapes /metrics.
func TestScrapeJobMatchesRules(t *testing.T) {
	job, err := ReadScrapeJob(Doc)
	if err != nil {
		t.Fatal(err)
	}
	name, _ := job["job_name"].(string)
	if name == "" {
		t.Fatalf("the documented job has no job_name: %v", job)
	}
	if p, _ := job["metrics_path"].(string); p != "" && p != "/metrics" {
		t.Errorf("metrics_path %q, rhi serves /metrics", p)
	}
	rules, err := os.ReadFile(Rules)
	if err != nil {
		t.Fatal(err)
	}
	if want := `expr: up{job="` + name + `"} == 0`; !strings.Contains(string(rules), want) {
		t.Errorf("%s: RhiDown does not select the documented job: no %q", Rules, want)
	}
}

// TestScrapeJobErrors: a page without the block, or with two jobs, is an
// error, not an empty job.
func TestScrapeJobErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"no section": "# Monitoring\n",
		"no block":   "## The scrape job\n\ntext\n## Next\n```yaml\nscrape_configs: []\n```\n",
		"two jobs":   "## The scrape job\n```yaml\nscrape_configs:\n  - job_name: a\n  - job_name: b\n```\n",
		"unknown":    "## The scrape job\n```yaml\nscrape_config:\n  - job_name: a\n```\n",
	} {
		if job, err := ScrapeJob([]byte(doc)); err == nil {
			t.Errorf("%s: got job %v, want an error", name, job)
		}
	}
}
