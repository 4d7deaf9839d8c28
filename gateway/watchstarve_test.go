package gateway

import (
	"os"
	"testing"
	"time"
)

// A program that touches the configuration file without pause (every
// event starts the settling wait again) must not keep the gateway from
// ever reading it: a person's edit made meanwhile is read all the same.
func TestReloadNotPutOffByEndlessEvents(t *testing.T) {
	g, cfg := sessionGateway(t)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				now := time.Now()
				os.Chtimes(cfg, now, now)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(200 * time.Millisecond)
	os.WriteFile(cfg, []byte("approval = \"per-call\"\n"), 0o600)
	waitStatus(t, g, "the edit while the file is touched", approvalIs("per-call"))
}
