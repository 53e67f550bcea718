package clienttest

import (
	"os"
	"testing"
)

// TestMain runs the test binary as a holder process (pausedHolder) when
// the paused-holder test starts it so; otherwise the tests.
func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(pausedHolder())
	}
	os.Exit(m.Run())
}
