package config

import (
	"errors"
	"strings"
)

// KeyRule is the health source's rule for upstream keys. It returns the
// resource a key reads: a name that every key reading that resource shares
// (APISIX's keys under two etcd prefixes read one checker), or why the
// source can read nothing by that key. The config refuses a key the rule
// refuses, naming its line, and a VIP that lists one resource twice.
//
// cmd/rhi hands every Load the APISIX client's rule (apisix.UpstreamKey).
// A nil rule checks only that the key is a path (pathKey) and takes each
// key as its own resource: what this package can say without a source.
type KeyRule func(key string) (resource string, err error)

// resource is what r says key reads; a nil rule is pathKey.
func (r KeyRule) resource(key string) (string, error) {
	if r == nil {
		return pathKey(key)
	}
	return r(key)
}

// allowedError is a KeyRule error that can also list what was allowed
// where the key went wrong (the resource types): the message then shows it
// as it shows every other key's "allowed: …".
type allowedError interface {
	error
	Problem() string // the error without the list
	Allowed() string
}

// pathKey is the rule without a source: "/" and segments, none empty, and
// not ending in "/".
func pathKey(key string) (string, error) {
	switch {
	case !strings.HasPrefix(key, "/"):
		return "", errors.New(`must start with "/"`)
	case strings.HasSuffix(key, "/"):
		return "", errors.New(`must not end with "/"`)
	case strings.Contains(key, "//"):
		return "", errors.New("empty path segment")
	}
	return key, nil
}
