// Package probespec is a data-path probe as configured: the
// Spec, its defaults and its pure checks (Validate, Warnings). It uses the
// standard library only and no net/http, so that the configuration (and
// through it the pure decision core) can hold a probe without pulling in
// the HTTP client; internal/probe sends what it describes and re-exports
// these names.
package probespec
