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

// A run's label is kept in the display context a restarted gateway reads
// back, whose file is bounded: runs labelled without bound would make the
// next gateway forget every run, the person's with them. A label past
// api.MaxRunLabel is refused as a mistake in the request.
func TestRunLabelIsBounded(t *testing.T) {
	_, sock := startGateway(t)
	c := api.NewClient(sock)
	ctx := context.Background()
	if _, err := c.PrepareRun(ctx, strings.Repeat("x", 250000)); !api.HasCode(err, api.CodeUsage) {
		t.Fatalf("a label of 250000 bytes: %v", err)
	}
	if _, err := c.PrepareRun(ctx, strings.Repeat("é", api.MaxRunLabel/2)); err != nil {
		t.Fatalf("a label of %d bytes: %v", api.MaxRunLabel, err)
	}
}
