package config

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Format prints c as YAML with every key present, defaults included:
// durations as "3s", addresses as "10.0.0.100/32", and each VIP's
// effective rise, fall and condition. Parse reads the output back to an
// equal Config. Format does not validate c.
func Format(c *Config) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	// The yaml tags of Config name the keys; yaml.v3 prints time.Duration
	// with String and netip.Prefix with MarshalText.
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("format config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("format config: %w", err)
	}
	return buf.Bytes(), nil
}
