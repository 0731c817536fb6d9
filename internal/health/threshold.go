package health

import "strconv"

// MinHealthy is an upstream's capacity threshold (min_healthy):
// how many of its counted nodes must be healthy for it to be up. The zero
// value is "no threshold": the upstream is up when one node is healthy, as
// it always was.
type MinHealthy struct {
	Count   int // nodes, ≥ 1; 0 when Percent is used or nothing is set
	Percent int // share of the counted nodes, 1-100, rounded up; 0 when unused
}

// IsZero reports whether no threshold is set.
func (m MinHealthy) IsZero() bool { return m.Count == 0 && m.Percent == 0 }

// String is the threshold as the config writes it: "3", "50%", or "" when
// none is set.
func (m MinHealthy) String() string {
	switch {
	case m.Percent > 0:
		return strconv.Itoa(m.Percent) + "%"
	case m.Count > 0:
		return strconv.Itoa(m.Count)
	}
	return ""
}

// MarshalText writes the threshold as String does.
func (m MinHealthy) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// upstreamEntry is how an Upstream with a threshold prints (YAML, JSON):
// the mapping form the config accepts.
type upstreamEntry struct {
	Key        string `json:"key" yaml:"key"`
	MinHealthy any    `json:"min_healthy" yaml:"min_healthy"` // an int or "P%"
}

// MarshalYAML prints an upstream without a threshold as its key (as the
// config has it) and one with a threshold as the mapping form.
func (u Upstream) MarshalYAML() (any, error) {
	if u.MinHealthy.IsZero() {
		return u.Key, nil
	}
	if u.MinHealthy.Percent > 0 {
		return upstreamEntry{Key: u.Key, MinHealthy: u.MinHealthy.String()}, nil
	}
	return upstreamEntry{Key: u.Key, MinHealthy: u.MinHealthy.Count}, nil
}
