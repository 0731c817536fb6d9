package probe

import "github.com/rhi-daemon/rhi/internal/probespec"

// The spec and its checks live in internal/probespec (stdlib only, so that
// config and decide can hold a Spec without net/http); these are the same
// names, for callers of this package.
type (
	// Spec is one VIP's probe as configured.
	Spec = probespec.Spec
	// FieldError is one problem with a probe spec, or one warning.
	FieldError = probespec.FieldError
)

// DefaultTimeout is the timeout of a probe that sets none.
const DefaultTimeout = probespec.DefaultTimeout

// Keys are the keys of a probe mapping, in the order the docs list them.
var Keys = probespec.Keys

// Defaults returns the spec a probe mapping starts from.
func Defaults() Spec { return probespec.Defaults() }

// Validate reports every problem with s, in key order; nil when s is usable.
func Validate(s Spec) []FieldError { return probespec.Validate(s) }

// Warnings lists what is valid in s but probably not meant.
func Warnings(s Spec) []FieldError { return probespec.Warnings(s) }

// Mask returns raw with the user info of its authority, if any, masked.
func Mask(raw string) string { return probespec.Mask(raw) }
