// Package health is rhi's shared vocabulary for upstream health: the
// upstream keys a VIP lists (Upstream), what one poll learned about one
// (Verdict, Result) and about all of them (Snapshot), and what a health
// source prepares to poll a fixed list of keys (Plan). A health source
// (the APISIX client) produces these words, config stores the keys, and
// decide, daemon and verify consume them. What a key means (APISIX's
// resource types and paths) is the source's business, not this package's.
// It uses the standard library only (and no net/http): the pure core must
// build without the HTTP client.
package health

import (
	"fmt"
	"strings"
)

// Verdict is what one poll learned about one upstream key.
type Verdict int8

const (
	// Failed: the upstream could not be read (connection error, deadline,
	// an error or an answer the source cannot make sense of).
	Failed Verdict = iota
	// Up: enough nodes are healthy (see MinHealthy).
	Up
	// Down: nodes are listed and too few of them are healthy.
	Down
	// NoChecker: the source knows the upstream but checks none of its
	// nodes, so it cannot say.
	NoChecker
	// NotFound: the source does not know the upstream.
	NotFound
)

var verdictNames = [...]string{Failed: "failed", Up: "up", Down: "down", NoChecker: "no_checker", NotFound: "not_found"}

func (v Verdict) String() string {
	if int(v) >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// MarshalText makes verdicts readable in JSON and logs.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Result is the outcome of reading one upstream key.
type Result struct {
	Verdict Verdict
	Healthy int32 // nodes counted healthy
	Total   int32 // nodes considered (purge_time nodes excluded)
	// Moving counts the nodes of Total that the source's checker is
	// moving between states: failing but not yet unhealthy, or recovering
	// but not yet healthy (APISIX's mostly_healthy, mostly_unhealthy);
	// 0 from a source that does not say.
	Moving int32
	Err    error // why the verdict is Failed, NotFound or NoChecker; nil otherwise
}

// Snapshot maps each upstream key of the config (e.g. "/apisix/upstreams/api")
// to what one poll learned about it.
type Snapshot map[string]Result

// Upstream is one upstream key as the config writes it, with its capacity
// threshold. Snapshots are keyed by Key. What the key names is the health
// source's to say: keys with different etcd prefixes may read one APISIX
// resource (see Plan).
type Upstream struct {
	Key string // e.g. "/apisix/upstreams/api"
	// MinHealthy is the capacity threshold (min_healthy); zero: none, up
	// with one healthy node. See decide.Met.
	MinHealthy MinHealthy
}

// Upstreams makes Upstreams of keys, without thresholds: a literal's or a
// test's list.
func Upstreams(keys ...string) []Upstream {
	ups := make([]Upstream, len(keys))
	for i, k := range keys {
		ups[i] = Upstream{Key: k}
	}
	return ups
}

// ShortKey is how `rhi status` and `rhi verify` show an upstream key: its
// last two segments ("upstreams/api" of "/apisix/upstreams/api"), or the
// key when it has fewer.
func ShortKey(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return key
	}
	if j := strings.LastIndexByte(key[:i], '/'); j >= 0 {
		return key[j+1:]
	}
	return key
}

// MarshalText writes the key as the config has it, so that a Config prints
// (YAML, JSON) as it was written.
func (u Upstream) MarshalText() ([]byte, error) { return []byte(u.Key), nil }
