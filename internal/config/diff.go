package config

import (
	"reflect"
	"strings"
)

// Changes is what a reload from one configuration to the next changes.
type Changes struct {
	// Keys lists every key whose value differs, as its YAML path
	// ("apisix_timeout", "bird.socket"; "vips" for any change to the
	// list), in the order of the Config type's fields.
	Keys []string
	// RestartOnly lists the keys of Keys that are bound at start-up (see
	// IsRestartOnly): a reload that changes one must be rejected as a
	// whole rather than applied in part.
	RestartOnly []string
	// Health says that the control API client must be built anew: it is
	// made from apisix_control_url, apisix_timeout and apisix_poll_mode,
	// and one of them changed.
	Health bool
}

// Reloadable reports whether a reload may apply the changes: none of them
// takes effect only on restart.
func (c Changes) Reloadable() bool { return len(c.RestartOnly) == 0 }

// IsRestartOnly reports whether key is bound at start-up: the interface the
// netlink side manages, the log files and their format, the status
// listener and the control socket, BIRD's socket, and the ownership record
// read at start-up. This is the one list of them.
func IsRestartOnly(key string) bool {
	switch key {
	case "interface", "main_log", "error_log", "log_format", "status_listen",
		"control_socket", "bird.socket", "state_file", "degraded.interface",
		"last_resort.interface", "site_id":
		return true
	}
	return false
}

// isHealthKey reports whether the control API client is built from key.
func isHealthKey(key string) bool {
	switch key {
	case "apisix_control_url", "apisix_timeout", "apisix_poll_mode":
		return true
	}
	return false
}

// Diff compares two configurations, key by key; it does no I/O.
func Diff(old, next *Config) Changes {
	var c Changes
	diffFields(reflect.ValueOf(*old), reflect.ValueOf(*next), "", &c.Keys)
	for _, k := range c.Keys {
		if IsRestartOnly(k) {
			c.RestartOnly = append(c.RestartOnly, k)
		}
		if isHealthKey(k) {
			c.Health = true
		}
	}
	return c
}

// diffFields appends to keys the YAML path of every field of the structs a
// and b (of one type) that differs.
func diffFields(a, b reflect.Value, prefix string, keys *[]string) {
	walk(a, b, prefix, func(key string, fa, fb reflect.Value) {
		if !reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			*keys = append(*keys, key)
		}
	})
}

// walk calls visit with the YAML path of each field of the structs a and b
// (of one type) and the two values. Sections (bird, failure_policy) are
// walked field by field; lists and other values are visited whole.
func walk(a, b reflect.Value, prefix string, visit func(key string, fa, fb reflect.Value)) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" { // derived from other keys
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if isSection(f.Type) {
			walk(a.Field(i), b.Field(i), prefix+name+".", visit)
			continue
		}
		visit(prefix+name, a.Field(i), b.Field(i))
	}
}

// isSection reports whether t is a section of the file: a struct of this
// package whose fields are all keys (exported), so that walking it misses
// nothing.
func isSection(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[Config]().PkgPath() {
		return false
	}
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}
