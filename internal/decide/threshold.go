package decide

import (
	"strconv"
	"strings"

	"github.com/rhi-daemon/rhi/internal/config"
	"github.com/rhi-daemon/rhi/internal/health"
)

// Needed is how many healthy nodes m asks of an upstream with total
// counted nodes: the count, or the share of total rounded up. No threshold
// needs one node. A share of 0 nodes needs 1, so that it is never met (an
// empty node list never satisfies a share).
//
// Needed and Met are the node-count helpers every capacity rule shares
// (min_healthy thresholds and the degraded tier).
func Needed(m health.MinHealthy, total int) int {
	switch {
	case m.Percent > 0 && total <= 0:
		return 1
	case m.Percent > 0:
		return (m.Percent*total + 99) / 100
	case m.Count > 0:
		return m.Count
	}
	return 1
}

// Met reports whether healthy of total counted nodes satisfy m.
func Met(m health.MinHealthy, healthy, total int) bool {
	if m.Percent > 0 && total <= 0 {
		return false
	}
	return healthy >= Needed(m, total)
}

// ClassifyUpstream is Classify for an upstream that may carry a capacity
// threshold. Without one it is Classify. With one, an upstream whose nodes
// were counted (verdict up or down) is up when its healthy nodes meet the
// threshold; no checker, not found and failed count as Classify says.
func ClassifyUpstream(u *health.Upstream, r health.Result, noChecker config.CountAs) UpstreamState {
	if u.MinHealthy.IsZero() || (r.Verdict != health.Up && r.Verdict != health.Down) {
		return Classify(r, noChecker)
	}
	if Met(u.MinHealthy, int(r.Healthy), int(r.Total)) {
		return UpstreamUp
	}
	return UpstreamDown
}

// Describe is one upstream's count for logs and `rhi verify`:
// "api: 1 of 10 healthy, needs 50%" (the last segment of the key, which
// names the upstream, its healthy and counted nodes, and the threshold if
// one is set).
func Describe(u *health.Upstream, r health.Result) string {
	var b strings.Builder
	b.WriteString(shortName(u.Key))
	b.WriteString(": ")
	switch r.Verdict {
	case health.Up, health.Down:
		b.WriteString(strconv.Itoa(int(r.Healthy)))
		b.WriteString(" of ")
		b.WriteString(strconv.Itoa(int(r.Total)))
		b.WriteString(" healthy")
	default:
		b.WriteString(r.Verdict.String())
	}
	if !u.MinHealthy.IsZero() {
		b.WriteString(", needs ")
		b.WriteString(u.MinHealthy.String())
	}
	return b.String()
}

// Explain lists, for a VIP, the upstreams that do not count as up in snap,
// each as Describe writes it, joined by "; ". It is "" when every upstream
// is up.
func Explain(v *config.VIP, snap health.Snapshot, noChecker config.CountAs) string {
	var parts []string
	for i := range v.Upstreams {
		u := &v.Upstreams[i]
		r, ok := snap[u.Key]
		if !ok {
			parts = append(parts, shortName(u.Key)+": not polled")
			continue
		}
		if ClassifyUpstream(u, r, noChecker) != UpstreamUp {
			parts = append(parts, Describe(u, r))
		}
	}
	return strings.Join(parts, "; ")
}

// shortName is the last segment of key: "api" of "/apisix/upstreams/api".
func shortName(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }
