package marker

import (
	"os"
	"testing"

	"github.com/postern/postern/internal/ptyrelay/ptytest"
)

// The wrappers the tests start meet the signals a session's process
// group is sent at their default, whatever the runner left ignored.
func TestMain(m *testing.M) {
	ptytest.DefaultSignals()
	os.Exit(m.Run())
}
