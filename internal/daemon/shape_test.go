package daemon

import (
	"reflect"
	"testing"
)

// The Daemon stays small enough to read: state that belongs together sits
// in its own type (loopEnv, inbox, pollState, drainState, …), not in
// another field of the loop's struct.
func TestDaemonFieldCount(t *testing.T) {
	const limit = 20
	if n := reflect.TypeFor[Daemon]().NumField(); n > limit {
		t.Errorf("Daemon has %d fields, at most %d: group the new state in a type of its own", n, limit)
	}
}
