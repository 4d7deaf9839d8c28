package gateway

import (
	"os"
	"testing"

	"github.com/postern/postern/internal/heldsig"
)

// The tests run as postern agent does: SIGUSR1 held from the first
// instruction (the test binary starts again for it), and what a gateway
// starts released through the test binary.
func TestMain(m *testing.M) {
	heldsig.Init()
	heldsig.Hold(false, nil, HeldSignals...)
	os.Exit(m.Run())
}
