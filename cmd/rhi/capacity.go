package main

import (
	"fmt"
	"strings"

	"github.com/rhi-daemon/rhi/internal/health"
	"github.com/rhi-daemon/rhi/internal/status"
)

// capacityWhy says which capacity rule holds a VIP withdrawn, from its
// status: upstreams below their threshold ("upstreams/api: 1 of 4
// healthy, needs 50%"), a probe that is not up; "" when neither does.
func capacityWhy(v status.VIPStatus) string {
	if v.Desired {
		return ""
	}
	var out []string
	for _, u := range v.Upstreams {
		if u.MinHealthy != "" && (u.Verdict == "up" || u.Verdict == "down") && u.Healthy < u.Needed {
			out = append(out, fmt.Sprintf("%s: %d of %d healthy, needs %s", health.ShortKey(u.Key), u.Healthy, u.Nodes, u.MinHealthy))
		}
	}
	if p := v.Probe; p != nil && p.Result != "up" {
		s := "probe " + p.Result
		if p.Error != "" {
			s += ": " + p.Error
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}
