package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
)

// The control operations, one method each (see api.Op for the contract).

func (g *Gateway) opStatus(context.Context, *procid.Peer, noArgs) (any, error) {
	return g.Status(), nil
}

func (g *Gateway) opLock(context.Context, *procid.Peer, noArgs) (any, error) {
	// Idempotent for the command line, also when another lock came
	// first while this one was on its way (it waits for the audit
	// anchor's seal); ssh-add -x on a locked agent fails, as with
	// ssh-agent. A locked gateway is answered at once.
	if state, _ := g.vault.State(); state == api.VaultLocked {
		return api.LockResult{Already: true}, nil
	}
	err := g.vault.LockCommand()
	if errors.Is(err, errAlreadyLocked) {
		return api.LockResult{Already: true}, nil
	}
	return api.LockResult{}, err
}

func (g *Gateway) opUnlock(ctx context.Context, peer *procid.Peer, a api.UnlockArgs) (any, error) {
	defer clear(a.Passphrase)
	defer clear(a.DataKey)
	person := g.engine.StandsOutsideRuns(peer)
	if len(a.DataKey) == 0 {
		return nil, g.vault.UnlockCommand(ctx, a.Passphrase, person, func() error { return g.engine.OutsideRuns(peer, "unlock") })
	}
	dk, err := vault.ParseDataKey(a.DataKey)
	if err != nil {
		return nil, badRequest(err)
	}
	defer dk.Wipe()
	return nil, g.vault.UnlockWithKey(ctx, dk, person)
}

// maxRuns bounds the runs the gateway keeps at once (approvals.MaxRuns),
// so that runs without end would not leave the gateway no descriptor to
// serve with.
// (A variable: tests shorten it.)
var maxRuns = approvals.MaxRuns

func (g *Gateway) opRunPrepare(_ context.Context, caller *procid.Peer, a api.RunPrepare) (any, error) {
	if n := g.engine.PendingRuns(); n >= approvals.MaxPendingRuns {
		return nil, fmt.Errorf("%d runs are prepared and not started yet; start them, or wait a minute for them to expire", n)
	}
	if len(a.Label) > api.MaxRunLabel {
		// Kept in the display context, whose file a restarted gateway
		// reads back within a bound.
		return nil, badRequest(fmt.Errorf("a run's label is at most %d bytes; this one is %d", api.MaxRunLabel, len(a.Label)))
	}
	if n, _, _ := g.engine.Counts(); n >= maxRuns {
		return nil, fmt.Errorf("the gateway keeps %d runs already, as many as it takes; end one (postern sessions lists them)", n)
	}
	// The caller's process is held, so that the run ends with it if it
	// never reports the process it launched.
	preparer, err := g.procs.Pin(caller.PID)
	if err != nil {
		return nil, peerError(err)
	}
	if preparer.StartTicks != caller.StartTicks {
		preparer.Close()
		return nil, errPeerChanged
	}
	run := g.engine.PrepareRun(a.Label, preparer.Process, func(id string) string { return api.RunSocket(g.opts.Socket, id) })
	if err := g.serveRun(run); err != nil {
		preparer.Close()
		g.engine.EndRun(run.ID, audit.ReasonProcessExited)
		return nil, fmt.Errorf("creating the run's socket: %w", err)
	}
	go g.engine.EndIfNeverStarted(run, preparer)
	return api.RunPrepared{ID: run.ID, Socket: run.Socket, Confine: g.runConfinement()}, nil
}

func (g *Gateway) opRunStart(_ context.Context, caller *procid.Peer, a api.RunStart) (any, error) {
	if a.Confinement.Namespaces {
		// Refused, not ended: the caller is not yet known to be the
		// run's; a prepared run that never starts ends with its
		// preparer.
		if err := g.verifyConfined(a.PID); err != nil {
			return nil, err
		}
	}
	_, err := g.engine.StartRun(a.ID, a.PID, caller, a.Confinement)
	return nil, err
}

func (g *Gateway) opCards(ctx context.Context, peer *procid.Peer, a api.CardsArgs) (any, error) {
	if a.Console {
		defer g.engine.AttachConsole(peer)()
	}
	if a.Wait {
		wait := a.WaitFor
		if wait <= 0 || wait > time.Minute {
			wait = time.Minute
		}
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		g.engine.WaitCards(ctx, a.Version)
	}
	cards, v := g.engine.Cards()
	return api.CardsResult{Version: v, Cards: cards}, nil
}

// recheckFollower is how long a follower of the cards waits without a
// change before the gateway checks again that it is the process that
// asked.
// (A variable: tests shorten it.)
var recheckFollower = time.Minute

// opCardsFollow sends a snapshot of the pending cards, then each change
// of them, until the client hangs up. A follower that is slow to read
// gets the changes that piled up meanwhile in one, in parts when it is
// large (cardParts). A console's follower
// counts as an approver while it follows.
func (g *Gateway) opCardsFollow(ctx context.Context, peer *procid.Peer, a api.CardsFollowArgs, send func(any) error) error {
	if a.Console {
		defer g.engine.AttachConsole(peer)()
	}
	var seq uint64
	// One timer for the follower's whole life, not a context with a
	// deadline for each change.
	quiet := time.NewTimer(recheckFollower)
	defer quiet.Stop()
	for {
		if d := g.engine.CardsSince(seq); d.Reset || d.Seq != seq {
			for _, part := range cardParts(&d) {
				if err := send(part); err != nil {
					return nil
				}
			}
			seq = d.Seq
		}
		quiet.Reset(recheckFollower)
		select {
		case <-ctx.Done():
			return nil
		case <-g.engine.CardsChanged(seq):
		case <-quiet.C:
			if err := peer.Verify(); err != nil {
				return peerError(err)
			}
		}
	}
}

func (g *Gateway) opAnswer(_ context.Context, approver *procid.Peer, a api.AnswerArgs) (any, error) {
	v, err := approvals.ParseVerdict(a.Decision)
	if err != nil {
		return nil, badRequest(err)
	}
	ans := approvals.Answer{Verdict: v, Subject: -1, Approver: approver.Describe()}
	if a.Subject != nil {
		ans.Subject = *a.Subject
	}
	applied, err := g.engine.AnswerCard(a.ID, ans, approver)
	if errors.Is(err, approvals.ErrNoCard) {
		return nil, fmt.Errorf("card %s: %w", a.ID, err)
	}
	if err != nil {
		return nil, err
	}
	return api.AnswerResult{Applied: applied.String()}, nil
}

func (g *Gateway) opSessions(context.Context, *procid.Peer, noArgs) (any, error) {
	runs, grants := g.engine.Sessions()
	return api.SessionsResult{Runs: runs, Grants: grants}, nil
}

func (g *Gateway) opJournalList(_ context.Context, _ *procid.Peer, a api.JournalArgs) (any, error) {
	j, err := g.readableJournal()
	if err != nil {
		return nil, err
	}
	if a.ID != "" {
		e, err := j.Get(a.ID)
		if err != nil {
			return nil, err
		}
		return []*journal.Entry{e}, nil
	}
	return api.ListJournalPage(j, a)
}

func (g *Gateway) opJournalResolve(ctx context.Context, peer *procid.Peer, a api.ResolveArgs) (any, error) {
	if g.journal.Load() == nil {
		return nil, errNoBastion
	}
	srv, fault := g.bastionNow()
	if fault != nil {
		return nil, fault.error()
	}
	// Saying what happened to a command is an approver's act: it decides
	// whether an identical retry may run. So is having a probe say it:
	// the markers it reads are in the host account, where a run's own
	// commands (sent through this bastion) can change them.
	if err := g.engine.OutsideRuns(peer, "journal resolve "+a.ID); err != nil {
		return nil, err
	}
	if a.Result != "" {
		return srv.ResolveByHand(a.ID, journal.Resolution{Result: a.Result, ExitStatus: a.ExitStatus, Evidence: a.Evidence}, peer.Describe())
	}
	return srv.Resolve(ctx, a.ID, peer)
}

// opJournalNew is a person's decision about a damaged journal.
func (g *Gateway) opJournalNew(_ context.Context, peer *procid.Peer, _ noArgs) (any, error) {
	// Starting over drops the retry guard of every command whose outcome
	// is unknown: like resolving an entry by hand, an approver's act.
	if err := g.engine.OutsideRuns(peer, "approver's act"); err != nil {
		return nil, err
	}
	aside, err := g.replaceJournal()
	if err != nil {
		return nil, err
	}
	return api.JournalNewResult{KeptAt: aside}, nil
}

// opJournalFollow streams the entries still running, then every entry as
// it changes, until the client hangs up.
func (g *Gateway) opJournalFollow(ctx context.Context, _ *procid.Peer, _ noArgs, send func(any) error) error {
	j, err := g.readableJournal()
	if err != nil {
		return err
	}
	changes := j.Follow(ctx) // from here on nothing is missed
	running, err := j.List(journal.ListOptions{Status: journal.StatusRunning})
	if err != nil {
		return err
	}
	if err := send(nil); err != nil {
		return err
	}
	for i := len(running) - 1; i >= 0; i-- {
		if err := send(running[i]); err != nil {
			return nil
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-changes:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				if err := j.DamageSoFar(); err != nil {
					return fmt.Errorf("the journal stream ended: %w: %v", errJournalDamaged, err)
				}
				return fmt.Errorf("the journal stream ended: the gateway stopped, the journal was replaced, or this reader fell more than %d changes behind (postern journal list shows them all)", journal.FollowBuffer)
			}
			if err := send(e); err != nil {
				return nil
			}
		}
	}
}

func (g *Gateway) opRevoke(_ context.Context, _ *procid.Peer, a api.RevokeArgs) (any, error) {
	if a.All {
		return api.RevokeResult{Revoked: g.engine.RevokeAll()}, nil
	}
	if a.Target == "" {
		return nil, badRequest(errors.New("name a grant or a run to revoke, or revoke all"))
	}
	n, err := g.engine.Revoke(a.Target)
	if err != nil {
		return nil, err
	}
	return api.RevokeResult{Revoked: n}, nil
}

func (g *Gateway) opVaultChange(ctx context.Context, peer *procid.Peer, c api.VaultChange) (any, error) {
	defer c.Wipe()
	if err := g.keepsVault(c.Path); err != nil {
		return nil, err
	}
	var res *api.VaultChanged
	err := g.vault.Change(ctx, c.Passphrase, g.engine.StandsOutsideRuns(peer), func(v *vault.Vault) (err error) {
		res, err = api.ApplyVaultChange(v, &c, peer.Describe(), g.engine.Record)
		return err
	})
	return res, err
}

// opVaultList answers, as the audit read does, only a caller outside
// every run: a run lists the vault no more easily than before (with the
// passphrase).
func (g *Gateway) opVaultList(_ context.Context, peer *procid.Peer, a api.VaultListArgs) (any, error) {
	if err := g.keepsVault(a.Path); err != nil {
		return nil, err
	}
	if err := g.engine.OutsideRuns(peer, "vault list"); err != nil {
		return nil, err
	}
	var res *api.VaultKeys
	err := g.vault.Read(func(v *vault.Vault) (err error) {
		res, err = api.ListVault(v, time.Now())
		return err
	})
	return res, err
}

// keepsVault refuses, as not kept here, a request for the vault at path
// ("" for whichever this gateway keeps) when this gateway keeps another:
// the command line then reads or changes that vault itself.
func (g *Gateway) keepsVault(path string) error {
	if path != "" && !api.SameFile(path, g.vaultPath) {
		return notKept(fmt.Errorf("this gateway keeps another vault (%s)", g.vaultPath))
	}
	return nil
}

// approvalInForce is the default approval mode in force: while a looser
// configuration waits for a person, the stricter of the approved one's
// and the file's (each request gets the stricter of both policies'
// modes), not the file's alone. The caller holds g.mu.
func (g *Gateway) approvalInForce() string {
	if len(g.pending) == 0 {
		return g.config.Approval
	}
	am, _ := audit.ParseMode(g.approved.Approval)
	fm, _ := audit.ParseMode(g.config.Approval)
	return string(approvals.Stricter(am, fm))
}

// Status reports the gateway's state.
func (g *Gateway) Status() api.Status {
	// The vault's lock is taken before g.mu, never under it.
	state, epoch := g.vault.State()
	noPassword := g.vault.NoPassword()
	ids, _ := g.keys.Identities()
	// Asked before g.mu is taken: a notification service asks round trips
	// on its bus, which may take seconds (a service that hangs, or a
	// program that took its name), and must not hold up everything else
	// the gateway does under g.mu meanwhile.
	approvers := g.engine.Approvers()
	// Counted before g.mu too: counting checks each run against its
	// process, and ends (and records) those that changed.
	var counts api.Counts
	counts.Runs, counts.Grants, counts.Cards = g.engine.Counts()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := api.Status{
		BootID:      g.bootID,
		PID:         os.Getpid(),
		Interpreter: g.interpreter,
		Started:     g.started.UTC().Format("2006-01-02T15:04:05Z"),
		Socket:      g.opts.Socket,
		Vault:       api.VaultStatus{State: state, Epoch: epoch, Path: g.vaultPath, NoPassword: noPassword, EpochError: errString(g.vault.epoch.Err())},
		Config:      api.ConfigStatus{Path: g.configPath, Approval: g.approvalInForce(), Restored: g.restored, Defaults: !g.configFromFile},
		Counts:      counts,
	}
	st.Counts.Keys = len(ids)
	st.Hosts = api.HostsStatus{Path: g.hostsPath, Count: g.engine.Hosts().Len(), Restored: g.hostsRestored}
	if g.hostsErr != nil {
		st.Hosts.Error = g.hostsErr.Error()
	}
	st.Approvers = approvers
	st.LastNoApprover = g.engine.LastNoApprover()
	if log := g.currentAudit(); log != nil {
		st.Audit = log.status()
	} else if _, err := audit.LoadSetup(g.stateDir); err == nil {
		st.Audit.SetUp = true
	}
	st.Config.Pending = g.pending
	st.Askpass.Path, st.Askpass.SHA256, st.Askpass.Error = g.askpass.Status()
	if g.configErr != nil {
		st.Config.Error = g.configErr.Error()
	}
	st.Bastion = g.journalStatus()
	if up := g.agent.Upstream; up != nil {
		st.Upstream = &api.UpstreamStatus{Socket: up.Socket, Stopped: up.Stopped()}
	}
	st.Audit.Syslog = g.exportStatus()
	st.Audit.Anchor = g.anchors.lastAnchor()
	return st
}
