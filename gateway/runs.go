package gateway

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
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
	if run.Ended() != "" {
		// It ended before its listener was there for its end to close
		// (a restored run whose process exited as the gateway started):
		// its end closes it from now on, and this closes it for one
		// that came before.
		g.closeRun(run)
		return nil
	}
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
		// The run's directory goes with it (its socket is gone).
		os.Remove(filepath.Dir(run.Socket))
	}
}

// restoreRuns serves again the sockets of runs registered before a
// restart whose processes still live; they must be approved again.
func (g *Gateway) restoreRuns() {
	for _, run := range g.engine.Restore() {
		// What the display context says of its confinement is checked as
		// at its start: the file is the user's to edit.
		if run.Confinement.Namespaces {
			if err := g.verifyConfined(run.Process.PID); err != nil {
				g.log.Warn("a restored run is not confined as the display context says", "run", run.ID, "err", err)
				g.engine.EndRun(run.ID, audit.ReasonIdentityMismatch)
				continue
			}
		}
		if err := g.serveRun(run); err != nil {
			g.log.Warn("cannot serve a restored run's socket", "run", run.ID, "err", err)
			g.engine.EndRun(run.ID, audit.ReasonGatewayRestarted)
			continue
		}
		g.log.Info("run from before the restart still alive; it must be approved again", "run", run.ID, "pid", run.Process.PID, "previous_boot", run.PrevBoot)
	}
}

// sweepRunSockets removes, beside the agent socket, the socket
// directories of runs this gateway does not serve: runs that ended while
// no gateway ran, or were prepared and never started when a gateway was
// killed. It runs once the live ones are served again (restoreRuns) and
// before the control socket takes a new run. Only a directory (not a
// link) holding a socket alone goes: what else is there stays.
func (g *Gateway) sweepRunSockets() {
	dir := filepath.Dir(g.opts.Socket)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	g.runMu.Lock()
	defer g.runMu.Unlock()
	// A run served again after a restart has an id of its own and the
	// socket its earlier id named: runs are told by their socket
	// directories, as the file system sees them.
	var served []os.FileInfo
	for _, l := range g.runLs {
		if fi, err := os.Stat(filepath.Dir(l.Addr().String())); err == nil {
			served = append(served, fi)
		}
	}
	for _, e := range entries {
		id, ok := api.RunSocketDir(g.opts.Socket, e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil || slices.ContainsFunc(served, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			continue
		}
		sock := api.RunSocket(g.opts.Socket, id)
		if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			os.Remove(sock)
		}
		if err := os.Remove(filepath.Dir(sock)); err == nil {
			g.log.Info("removed the socket of a run that no longer lives", "run", id)
		}
	}
}

// runConfinement is what a confined run must not see or change of the
// gateway, with the [run] settings: hidden, the state directory, the
// directory of the agent and control sockets and the upstream agent's
// socket (upstreamHidden); read-only, the configuration's directory, the
// known_hosts files, the askpass program and the gateway's own
// executable (in a checkout the run works in, rewritten, it would be the
// person's next approval console), each a regular file outside those;
// reachable, the bastion's socket.
func (g *Gateway) runConfinement() api.RunConfinement {
	g.mu.Lock()
	cfg := g.config
	g.mu.Unlock()
	c := api.RunConfinement{
		Hide:      append([]string{g.stateDir, filepath.Dir(g.opts.Socket)}, expandHome(cfg.Run.Hide)...),
		ReadOnly:  []string{filepath.Dir(g.configPath)},
		ReadWrite: expandHome(cfg.Run.ReadWrite),
	}
	if up := g.agent.Upstream; up != nil {
		c.Hide = append(c.Hide, upstreamHides(up.Socket)...)
	}
	// The known_hosts files are shown read-only so that a run cannot
	// rewrite them; one in a hidden tree is out of its reach already, and
	// showing it would show what is hidden. Only regular files: a socket
	// shown read-only is reachable (the session bus would start programs
	// outside the run).
	// So are the askpass program and the gateway's executable, which a
	// run may have made links to a socket where it works.
	files := expandHome(append(slices.Clone(cfg.KnownHosts), cfg.Bastion.KnownHosts...))
	if p, _, _ := g.askpass.Status(); p != "" {
		files = append(files, p)
	}
	if g.exe != "" {
		files = append(files, g.exe)
	}
	for _, p := range files {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && !hiddenIn(p, c.Hide) {
			c.ReadOnly = append(c.ReadOnly, p)
		}
	}
	c.ReadOnly = append(c.ReadOnly, expandHome(cfg.Run.ReadOnly)...)
	if g.bastionL != nil {
		c.Sockets = append(c.Sockets, g.bastionL.Addr().String())
	}
	return c
}

// hiddenIn reports whether path p, or the file it leads to, is or lies in
// one of the trees of hide (or of the trees they lead to).
func hiddenIn(p string, hide []string) bool {
	resolved := func(p string) []string {
		out := []string{filepath.Clean(p)}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != out[0] {
			out = append(out, r)
		}
		return out
	}
	ps := resolved(p)
	for _, h := range hide {
		for _, hp := range resolved(h) {
			for _, pp := range ps {
				if confine.Under(pp, hp) {
					return true
				}
			}
		}
	}
	return false
}

// upstreamHidden is what a confined run is kept from of the upstream
// agent's socket sock, whose keys it would otherwise use without postern:
// the socket's directory where that is a directory of its own inside the
// home directory (~/.1password, ~/.gnupg, whose other sockets sign with
// the same keys), so that a socket the upstream makes anew while the run
// goes on is hidden too; else the socket alone (a directory the run needs
// more broadly, such as the home directory itself or /run, stays).
func upstreamHidden(sock, home string) string {
	if dir := filepath.Dir(sock); home != "" && home != "/" && dir != filepath.Clean(home) && confine.Under(dir, filepath.Clean(home)) {
		return dir
	}
	return sock
}

// upstreamHides is what a confined run is kept from of the upstream
// agent's socket sock (upstreamHidden): the path as configured and, where
// it leads elsewhere through a symbolic link (~/.ssh/agent.sock to
// ~/.1password/agent.sock), the socket it leads to, whose own directory
// would otherwise stay within the run's reach.
func upstreamHides(sock string) []string {
	home, _ := os.UserHomeDir()
	out := []string{upstreamHidden(sock, home)}
	real, err := filepath.EvalSymlinks(sock)
	if err != nil {
		// No socket yet: where its directory leads.
		if real, err = filepath.EvalSymlinks(filepath.Dir(sock)); err == nil {
			real = filepath.Join(real, filepath.Base(sock))
		}
	}
	if err != nil || real == filepath.Clean(sock) {
		return out
	}
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	return append(out, upstreamHidden(real, home))
}

// upstreamHiddenAlone reports whether confined runs are kept from the
// upstream's socket sock only as the file it is when each run starts: it
// is not in a directory of its own in the home directory (upstreamHidden)
// nor in a tree runs never see (the runtime directory, /tmp).
func upstreamHiddenAlone(sock, home, runtime string) bool {
	if upstreamHidden(sock, home) != sock {
		return false
	}
	for _, dir := range []string{runtime, confine.UserRuntimeDir(), "/tmp"} {
		if dir != "" && confine.Under(sock, filepath.Clean(dir)) {
			return false
		}
	}
	return true
}
