package config

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rhi-daemon/rhi/internal/health"
)

// upstreamKeys are the keys of an upstream entry written as a mapping.
var upstreamKeys = []string{"key", "min_healthy"}

const minHealthyAllowed = `a count of nodes, at least 1, or a share "1%"-"100%"`

// parseMinHealthy reads min_healthy: a count ("3") or a share ("50%").
func parseMinHealthy(s string) (health.MinHealthy, issue) {
	if s == "" {
		return health.MinHealthy{}, issue{msg: "empty", allowed: minHealthyAllowed}
	}
	if pct, isShare := strings.CutSuffix(s, "%"); isShare {
		n, err := strconv.Atoi(pct)
		switch {
		case err != nil || strings.HasPrefix(pct, "+"):
			return health.MinHealthy{}, issue{msg: "not a share", allowed: minHealthyAllowed}
		case n < 1:
			return health.MinHealthy{}, issue{msg: "share must be at least 1% (leave the key out for \"one healthy node\")", allowed: minHealthyAllowed}
		case n > 100:
			return health.MinHealthy{}, issue{msg: "share over 100%", allowed: minHealthyAllowed}
		}
		return health.MinHealthy{Percent: n}, issue{}
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || strings.HasPrefix(s, "+"):
		return health.MinHealthy{}, issue{msg: "not a count or a share", allowed: minHealthyAllowed}
	case n < 1:
		return health.MinHealthy{}, issue{msg: "must be at least 1 (leave the key out for \"one healthy node\")", allowed: minHealthyAllowed}
	}
	return health.MinHealthy{Count: n}, issue{}
}

// upstreamItem reads one entry of a VIP's upstreams: a plain key, or a
// mapping {key, min_healthy}. It returns the key, the node that holds it
// (for messages) and the entry's own threshold (zero if none).
func (p *parser) upstreamItem(it *yaml.Node, path string) (key string, keyNode *yaml.Node, mh health.MinHealthy, ok bool) {
	if it.Kind != yaml.MappingNode {
		key, ok = p.scalar(it, path)
		return key, it, health.MinHealthy{}, ok
	}
	m, ok := p.mapping(it, path, upstreamKeys...)
	if !ok {
		return "", nil, health.MinHealthy{}, false
	}
	if m["key"] == nil {
		p.report(it, path+".key", "", issue{msg: "required key missing"})
		ok = false
	} else if key, ok = p.scalar(m["key"], path+".key"); ok {
		keyNode = m["key"]
	}
	if n := m["min_healthy"]; n != nil && !set(p, n, path+".min_healthy", &mh, parseMinHealthy) {
		ok = false
	}
	return key, keyNode, mh, ok
}
