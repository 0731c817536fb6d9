package confirm

import (
	"maps"
	"reflect"
	"testing"
)

// TestExportsSeenShares checks that equal exported maps of one report are
// shared, and that a different one keeps its own contents.
func TestExportsSeenShares(t *testing.T) {
	same := func(a, b map[string]bool) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	var e exportsSeen
	first := e.intern(map[string]bool{"peer_a": true, "peer_b": true})
	again := e.intern(map[string]bool{"peer_b": true, "peer_a": true})
	if !same(first, again) {
		t.Error("an equal map was not shared")
	}
	other := e.intern(map[string]bool{"peer_a": true, "peer_b": false})
	if same(first, other) || !maps.Equal(other, map[string]bool{"peer_a": true, "peer_b": false}) {
		t.Errorf("a different map became %v", other)
	}
	if e.intern(nil) != nil {
		t.Error("nil did not stay nil")
	}
	for i := range 2 * maxExportsSeen {
		m := map[string]bool{string(rune('a' + i)): true}
		if got := e.intern(m); !maps.Equal(got, m) {
			t.Fatalf("map %d came back as %v", i, got)
		}
	}
	if len(e) != maxExportsSeen {
		t.Errorf("%d maps kept, want at most %d", len(e), maxExportsSeen)
	}
}
