package apisix

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rhi-daemon/rhi/internal/health"
)

// A simple decoder, kept as a reference: json.Unmarshal into
// structs (with src_id added to the 2.x keys). It is lenient where the
// walker is strict (key case, repeated keys, mixed formats), so the two
// must agree on every body the walker reads.

type refBody struct {
	Name         *string         `json:"name"`
	Nodes        json.RawMessage `json:"nodes"`
	HealthyNodes json.RawMessage `json:"healthy_nodes"`
	SrcType      json.RawMessage `json:"src_type"`
	SrcID        json.RawMessage `json:"src_id"`
}

type refNode struct {
	Status    string          `json:"status"`
	PurgeTime json.RawMessage `json:"purge_time"`
}

// refList decodes a node list the old way: missing, null and {} are empty.
func refList(raw json.RawMessage, dst any) bool {
	b := trimJSONSpace(raw)
	switch {
	case len(b) == 0 || string(b) == "null":
		return true
	case b[0] == '{':
		return len(trimJSONSpace(b[1:len(b)-1])) == 0
	case b[0] != '[':
		return false
	}
	return json.Unmarshal(b, dst) == nil
}

// refDecode is the old decodeHealth; ok is false where it gave Failed.
func refDecode(body []byte) (got, bool) {
	var h refBody
	b := trimJSONSpace(body)
	if json.Unmarshal(b, &h) != nil || len(b) == 0 || b[0] != '{' || h.Name == nil {
		return got{}, false
	}
	if h.HealthyNodes != nil || h.SrcType != nil || h.SrcID != nil {
		var nodes, healthy []struct{}
		if !refList(h.Nodes, &nodes) || !refList(h.HealthyNodes, &healthy) {
			return got{}, false
		}
		g := got{Healthy: len(healthy), Total: max(len(nodes), len(healthy))}
		switch {
		case len(healthy) > 0:
			g.Verdict = health.Up
		case len(nodes) == 0:
			g.Verdict, g.Err = health.NoChecker, true
		default:
			g.Verdict = health.Down
		}
		return g, true
	}
	return refV3(h.Nodes)
}

func refV3(raw json.RawMessage) (got, bool) {
	var nodes []refNode
	if !refList(raw, &nodes) {
		return got{}, false
	}
	var g got
	for _, n := range nodes {
		if n.PurgeTime != nil && string(n.PurgeTime) != "null" {
			continue
		}
		g.Total++
		if n.Status == "healthy" || n.Status == "mostly_healthy" {
			g.Healthy++
		}
	}
	switch {
	case g.Total == 0:
		g.Verdict, g.Err = health.NoChecker, true
	case g.Healthy > 0:
		g.Verdict = health.Up
	default:
		g.Verdict = health.Down
	}
	return g, true
}

// FuzzDecodeAgainstReference: wherever the walker reads a body, the old
// decoder read it the same. Seeded with the fixtures and bodies around
// escapes, nulls and unknown keys.
func FuzzDecodeAgainstReference(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	for _, s := range []string{
		`{"n\u0061me":"x","nodes":[{"st\u0061tus":"healthy"},null,{"purge_time":{}}]}`,
		`{"name":"x","weight":[{"status":"healthy"}],"nodes":[{"status":null,"x":"\"}"}]}`,
		`{"name":"x","src_id":"1","nodes":[{"host":"a"},null],"healthy_nodes":[{}]}`,
		` {"name":"\/apisix\/upstreams\/a","nodes":{ },"type":"tcp"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := decodeHealth(body)
		if r.Verdict == health.Failed {
			return
		}
		want, ok := refDecode(body)
		if !ok || want != summary(r) {
			t.Errorf("%q: walker %+v (%v), reference %+v (ok %v)", body, summary(r), r.Err, want, ok)
		}
	})
}

// FuzzDecodeListAgainstReference: every entry the streaming list decoder
// reads (once, and not Failed) reads the same through the old decoder.
func FuzzDecodeListAgainstReference(f *testing.F) {
	for name, b := range fixtures(f) {
		if strings.Contains(name, "list") {
			f.Add(b)
		}
	}
	f.Add([]byte(`[{"nodes":[{"status":"healthy"}],"name":"\/a\/upstreams\/b"},{"name":"/upstreams/c","type":{"x":["]"]}}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeBytes(body)
		if err != nil {
			return
		}
		var entries []struct {
			Name  *string         `json:"name"`
			Nodes json.RawMessage `json:"nodes"`
		}
		if err := json.Unmarshal(body, &entries); err != nil && string(trimJSONSpace(body))[0] == '[' {
			t.Fatalf("%q: walker read %d resources, reference: %v", body, len(m), err)
		}
		for _, e := range entries {
			ref, err := ParseRef(*e.Name)
			l, ok := m[ref]
			if err != nil || !ok || l.entries != 1 || l.res.Verdict == health.Failed {
				continue
			}
			if want, ok := refV3(e.Nodes); !ok || want != summary(l.res) {
				t.Errorf("%q: %v: walker %+v, reference %+v (ok %v)", body, ref, summary(l.res), want, ok)
			}
		}
	})
}
