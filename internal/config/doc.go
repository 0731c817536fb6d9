// Package config reads rhi's YAML configuration into a typed,
// validated [Config] with every default applied.
//
// Parsing is strict and pure: unknown keys are errors so that typos cannot
// pass silently, and every problem in a file is reported at once, each with
// its file, line, key path, the offending value and what is allowed (see
// [Errors]). Checks against the host (does the interface exist, is the BIRD
// socket reachable) are not done here; they belong to start-up.
package config
