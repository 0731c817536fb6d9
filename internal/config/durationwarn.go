package config

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// A duration may be written as a whole number of seconds ("3"), which
// reads the same as "3s". A large one is more likely milliseconds meant
// than minutes: `apisix_poll_interval: 500` polls every 8m20s. It stays
// valid (a file that rhi ran with yesterday must still start), and the
// warnings below say which key, value and line, and how to write it.

// maxQuietSeconds is the largest bare whole number of seconds a duration
// takes without a warning, and the longest apisix_poll_interval: past a
// minute between looks, a dead backend's VIP stays announced for longer
// than any operator would expect of a health check.
const maxQuietSeconds = 60

// bareSeconds notes a duration written as a whole number above
// maxQuietSeconds.
func (p *parser) bareSeconds(n *yaml.Node, path, written string, d time.Duration) {
	v, err := strconv.ParseInt(written, 10, 64)
	if err != nil || v <= maxQuietSeconds {
		return
	}
	p.notes = append(p.notes, fmt.Sprintf(
		"%s (line %d): the whole number %q is read as seconds, %v; write %sms if milliseconds were meant, or %v to keep it and silence this",
		path, n.Line, written, d, written, d))
}

// slowPoll notes an apisix_poll_interval over maxQuietSeconds.
func (p *parser) slowPoll(n *yaml.Node, d time.Duration) {
	if n == nil || d <= maxQuietSeconds*time.Second {
		return
	}
	p.notes = append(p.notes, fmt.Sprintf(
		"apisix_poll_interval (line %d): %v is over %v: a backend that dies keeps its VIP announced for up to %v (plus fall - 1 polls) before rhi looks again; the default is 3s",
		n.Line, d, maxQuietSeconds*time.Second, d))
}
