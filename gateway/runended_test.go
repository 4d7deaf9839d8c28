package gateway

import (
	"net"
	"os"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
)

// A run that ends before its socket is served (a restored run whose
// process exits as the gateway starts) has no socket left behind: the
// end, which closes a run's socket, came before there was one to close.
func TestNoSocketForARunEndedBeforeItWasServed(t *testing.T) {
	g, sock := startGateway(t)
	p, err := procid.Host.Inspect(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	run := g.engine.PrepareRun("ended", p, func(id string) string { return api.RunSocket(sock, id) })
	g.engine.EndRun(run.ID, audit.ReasonProcessExited)
	if err := g.serveRun(run); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("unix", run.Socket); err == nil {
		c.Close()
		t.Fatalf("the ended run's socket %s is served", run.Socket)
	}
	g.runMu.Lock()
	_, listening := g.runLs[run.ID]
	g.runMu.Unlock()
	if listening {
		t.Fatal("the gateway still listens for the ended run")
	}
}
