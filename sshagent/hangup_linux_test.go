package sshagent

import (
	"testing"
	"time"
)

// A client that sends the start of a next request while its card is up,
// then hangs up, has hung up: the bytes do not end the watch, and the
// card does not stay up for nobody (nor is its withdrawal hidden from
// the engine's pace).
func TestHangupAfterPipelinedBytes(t *testing.T) {
	d := &slowDecider{ended: make(chan struct{})}
	d.wait.Store(int64(time.Hour))
	hangUpWhileDeciding(t, d, 40*time.Millisecond, 0, 0, 0)
}
