package probe

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// test closes its servers and its Prober's idle connections, so a
// connection the Prober kept or a request it abandoned would show here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
