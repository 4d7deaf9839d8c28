package gateway

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
)

// A run holds descriptors (its socket, its process's pins) that no
// shedding of idle connections frees: a program of the user's that
// started runs without end would take every descriptor the gateway
// serves with, and with them every signature and every control call.
// Past maxRuns a run is refused; once one ends, another starts.
func TestRunsAreBounded(t *testing.T) {
	defer func(n int) { maxRuns = n }(maxRuns)
	maxRuns = 3
	_, sock := startGateway(t)
	c := api.NewClient(sock)
	ctx := context.Background()
	var kids []*exec.Cmd
	start := func() error {
		t.Helper()
		prep, err := c.PrepareRun(ctx, "bound")
		if err != nil {
			return err
		}
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, cmd)
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		return c.StartRun(ctx, prep.ID, cmd.Process.Pid, confine.Level{})
	}
	for i := range maxRuns {
		if err := start(); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	err := start()
	if err == nil || !strings.Contains(err.Error(), "3 runs") {
		t.Fatalf("a run past the bound of %d: %v", maxRuns, err)
	}
	kids[0].Process.Kill()
	kids[0].Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, err := c.Status(ctx); err == nil && st.Counts.Runs < maxRuns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run whose process exited did not end")
		}
	}
	if err := start(); err != nil {
		t.Fatalf("a run once another ended: %v", err)
	}
}
