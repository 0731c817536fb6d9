// Package readme walks the README's getting-started path where a test
// can: the rhi.yaml it shows, run by rhi (the packaged binary when
// packaging/check-readme.sh passes it) in the netns lab, where a fake
// control API stands in for APISIX and the lab's router for the network;
// the dry run, the start and `rhi verify` of its steps 6 to 8.
package readme

import (
	"errors"
	"fmt"
	"strings"
)

// Path is the README, relative to this package.
const Path = "../../README.md"

// Block returns the first fenced block of language lang ("yaml", "sh", ""
// for a bare fence) in the README step whose heading starts with "### "
// + step (e.g. "5."): what an operator copies.
func Block(readme []byte, step, lang string) (string, error) {
	text := string(readme)
	i := strings.Index(text, "\n### "+step)
	if i < 0 {
		return "", fmt.Errorf("README: no step %q", "### "+step)
	}
	sec := text[i+1:]
	if j := strings.Index(sec[1:], "\n### "); j >= 0 {
		sec = sec[:j+1]
	}
	for rest := sec; ; {
		k := strings.Index(rest, "```")
		if k < 0 {
			return "", fmt.Errorf("README step %q: no ```%s block", step, lang)
		}
		rest = rest[k+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return "", errors.New("README: a fence without a line end")
		}
		info := rest[:nl]
		body, after, ok := strings.Cut(rest[nl+1:], "```")
		if !ok {
			return "", fmt.Errorf("README step %q: a block is not closed", step)
		}
		if info == lang {
			return body, nil
		}
		rest = after
	}
}
