package gateway

import (
	"context"
	"testing"

	"github.com/postern/postern/gateway/api"
)

// postern lock succeeds on a gateway already locked, also when another
// postern lock locked it while this one was on its way: two at once
// (a screen locker's hook and the person) both succeed.
func TestLockWhileAnotherLocks(t *testing.T) {
	g, sock := startGateway(t)
	before := g.vault.beforeLock
	var other *api.LockResult
	var otherErr error
	first := true
	g.vault.beforeLock = func() {
		if first {
			// The other lock comes and goes while this one waits here.
			first = false
			other, otherErr = api.NewClient(sock).Lock(context.Background())
		}
		if before != nil {
			before()
		}
	}
	res, err := api.NewClient(sock).Lock(context.Background())
	if otherErr != nil || other == nil || other.Already {
		t.Fatalf("the other lock: %+v, %v", other, otherErr)
	}
	if err != nil {
		t.Fatalf("a lock that another lock overtook: %v", err)
	}
	if !res.Already {
		t.Fatalf("a lock that another lock overtook: %+v, want already locked", res)
	}
}
