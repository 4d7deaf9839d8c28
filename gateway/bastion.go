package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/safesocket"
	"github.com/postern/postern/internal/xdg"
	"github.com/postern/postern/sshagent"
)

// keySource lends the keyring to the bastion: its usable keys, and
// signatures with them (the bastion asks the approval engine first).
type keySource struct{ keys *sshagent.Keyring }

func (k keySource) Keys() ([]bastion.Key, error) {
	ids, err := k.keys.Identities()
	if err != nil {
		return nil, err
	}
	out := make([]bastion.Key, 0, len(ids))
	for _, id := range ids {
		confirm, dest := k.keys.Constraints(id)
		if len(dest) > 0 {
			continue // restricted by ssh-add -h to hops ssh itself binds
		}
		out = append(out, bastion.Key{Public: id.Key, Info: approvals.Key{
			Fingerprint: id.Fingerprint(), Comment: id.Comment, Comments: func() []string { return k.keys.Comments(id.Key) }, Type: id.Key.Type(), Confirm: confirm,
		}})
	}
	return out, nil
}

func (k keySource) Locks() uint64 { return k.keys.Locks() }

func (k keySource) SignSince(locks uint64, key ssh.PublicKey, data []byte, algo string) (*ssh.Signature, error) {
	id, err := k.keys.Lookup(key)
	if err != nil {
		return nil, err
	}
	var flags agent.SignatureFlags
	switch {
	case strings.Contains(algo, "rsa-sha2-256"):
		flags = agent.SignatureFlagRsaSha256
	case strings.Contains(algo, "rsa-sha2-512"):
		flags = agent.SignatureFlagRsaSha512
	}
	return k.keys.SignSince(locks, id, data, uint32(flags))
}

// expandHome turns every "~/x" into a path under $HOME.
func expandHome(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = homePath(f)
	}
	return out
}

// startBastion opens the command journal and serves the bastion's socket
// when the configuration enables it.
func (g *Gateway) startBastion() error {
	cfg := g.config.Bastion
	if !cfg.Enabled {
		return nil
	}
	id, err := bastion.LoadIdentity(g.stateDir)
	if err == nil {
		err = atomicfile.Write(filepath.Join(g.stateDir, xdg.BastionKnownHostsFile), []byte(id.KnownHostsLine()), 0o600)
	}
	known := cfg.KnownHosts
	if len(known) == 0 {
		known = g.config.KnownHosts
	}
	g.bastionStarted = &bastionStart{bastion: cfg, knownHosts: g.config.KnownHosts}
	build := func(j *journal.Journal) *bastion.Server {
		srv := bastion.New(bastion.Config{
			Identity: id, Keys: keySource{g.keys}, Decider: g.engine, Journal: j, Audit: g.engine,
			Procs: g.procs, Log: g.log, BootID: g.bootID, KnownHosts: expandHome(known), Markers: cfg.Markers,
			Limits: g.limits.bastion, RequirePQKex: cfg.RequirePQKex,
		})
		// What the journal's Open found an earlier gateway left running.
		srv.RecordRestarted()
		return srv
	}
	if err != nil {
		// Its keys stop the bastion, not the agent: it listens, and
		// refuses every command saying why.
		g.bastionKeysFaulted(filepath.Join(g.stateDir, xdg.JournalFile), err)
	} else if err := g.openJournal(filepath.Join(g.stateDir, xdg.JournalFile), build); err != nil {
		return err
	}
	path, err := api.BastionSocket(cfg.Socket, g.opts.Socket)
	if err != nil {
		return err
	}
	l, err := listenIdentified(path)
	if err != nil {
		return fmt.Errorf("bastion socket: %w", err)
	}
	g.bastionL = l
	g.srv.serve(func() error {
		return g.agent.ServeOwn(l, func() error {
			return safesocket.Serve(g.srv.ctx, l, &g.bastionConns, g.serveBastionConn, g.exhausted, bastion.RefuseShort)
		})
	})
	g.log.Info("bastion listening", "socket", path)
	return nil
}

// stopBastion stops every bastion server the gateway built (a new journal
// builds a new one), giving their running commands until grace passes.
func (g *Gateway) stopBastion(grace time.Duration) {
	js := g.journal.Load()
	if js == nil {
		return
	}
	js.mu.Lock()
	servers := slices.Clone(js.servers)
	js.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() {
			if n := s.Stop(ctx); n > 0 {
				g.log.Warn("stopping: bastion commands cut off after the grace period; their outcome is unknown", "connections", n, "grace", grace)
			}
		})
	}
	wg.Wait()
	if !waitAtMost(stopWait, g.bastionConns.Wait) {
		g.log.Warn("stopping: bastion connections still open; not waiting for them")
	}
}
