package monitoring

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Doc is the monitoring page, relative to this package.
const Doc = "../../docs/monitoring.md"

// Rules is the shipped alert rules file, relative to this package.
const Rules = "../../deploy/prometheus/rhi-alerts.yml"

// ScrapeJob reads the scrape job that the "## The scrape job" section of
// the monitoring page documents: its first yaml block, a scrape_configs
// list of one job.
func ScrapeJob(doc []byte) (map[string]any, error) {
	_, sec, ok := strings.Cut(string(doc), "\n## The scrape job\n")
	if !ok {
		return nil, errors.New("no \"## The scrape job\" section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, ok := strings.Cut(sec, "```yaml\n")
	if !ok {
		return nil, errors.New("the scrape job section has no ```yaml block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return nil, errors.New("the scrape job's yaml block is not closed")
	}
	var cfg struct {
		ScrapeConfigs []map[string]any `yaml:"scrape_configs"`
	}
	dec := yaml.NewDecoder(strings.NewReader(block))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("the scrape job: %w", err)
	}
	if len(cfg.ScrapeConfigs) != 1 {
		return nil, fmt.Errorf("the scrape job: %d jobs under scrape_configs, want 1", len(cfg.ScrapeConfigs))
	}
	return cfg.ScrapeConfigs[0], nil
}

// ReadScrapeJob is ScrapeJob of the file at path.
func ReadScrapeJob(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	job, err := ScrapeJob(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return job, nil
}
