package daemon

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// loop, the confirmer and the HTTP client must all stop with Run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
