package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
)

// "postern run" starts the command before the gateway registers it. In
// that window an approver's act from the preparer or below it (the
// command, unconfined, may run already) is refused as from inside the
// run; once the prepared run is released, it is an approver's act again.
func TestApproverActsRefusedWhileARunIsPrepared(t *testing.T) {
	_, sock := startGateway(t)
	c := api.NewClient(sock)
	ctx := context.Background()
	prep, err := c.PrepareRun(ctx, "window")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RemoveHost(ctx, "nothing"); err == nil || !strings.Contains(err.Error(), "descendant") {
		t.Fatalf("an approver's act from the preparer of a run not yet started: %v", err)
	}
	// Released (postern run could not start its command): nothing is
	// inside any more.
	c.StartRun(ctx, prep.ID, 0, confine.Level{})
	if _, err := c.RemoveHost(ctx, "nothing"); err == nil || strings.Contains(err.Error(), "descendant") {
		t.Fatalf("after the prepared run was released: %v", err)
	}
}
