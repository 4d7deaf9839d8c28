package gateway

import (
	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/sshagent"
)

// Every run has an agent socket of its own (api.RunSocket), which serves
// only the run's process and its live descendants.

// serveRun listens on run's socket and serves it until the run ends or
// the gateway stops.
func (g *Gateway) serveRun(run *approvals.Run) error {
	l, err := listenIdentified(run.Socket)
	if err != nil {
		return err
	}
	g.runMu.Lock()
	g.runLs[run.ID] = l
	g.runMu.Unlock()
	ep := &sshagent.Endpoint{Channel: approvals.Channel{Kind: approvals.ChannelRun, Run: run.ID}, Admit: g.engine.AdmitRun(run.ID)}
	g.srv.serve(func() error { return g.agent.Serve(g.srv.ctx, l, ep) })
	return nil
}

// closeRun stops serving an ended run's socket.
func (g *Gateway) closeRun(run *approvals.Run) {
	g.runMu.Lock()
	l := g.runLs[run.ID]
	delete(g.runLs, run.ID)
	g.runMu.Unlock()
	if l != nil {
		l.Close()
	}
}

// restoreRuns serves again the sockets of runs registered before a
// restart whose processes still live; they must be approved again.
func (g *Gateway) restoreRuns() {
	for _, run := range g.engine.Restore() {
		if err := g.serveRun(run); err != nil {
			g.log.Warn("cannot serve a restored run's socket", "run", run.ID, "err", err)
			g.engine.EndRun(run.ID, audit.ReasonGatewayRestarted)
			continue
		}
		g.log.Info("run from before the restart still alive; it must be approved again", "run", run.ID, "pid", run.Process.PID, "previous_boot", run.PrevBoot)
	}
}
