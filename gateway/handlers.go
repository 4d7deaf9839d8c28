package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"

	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
)

// Status is the answer to "postern status".
type Status struct {
	BootID  string       `json:"boot_id"`
	PID     int          `json:"pid"`
	Started string       `json:"started"`
	Socket  string       `json:"socket"`
	Vault   VaultStatus  `json:"vault"`
	Config  ConfigStatus `json:"config"`
	Audit   AuditStatus  `json:"audit"`
	Counts  Counts       `json:"counts"`
}

// AuditStatus describes the audit log.
type AuditStatus struct {
	Enabled bool `json:"enabled"`
	// SetUp is true when the log is set up but this gateway started before
	// it was: it writes no log until it restarts.
	SetUp   bool   `json:"set_up_after_start,omitempty"`
	Path    string `json:"path,omitempty"`
	LogID   string `json:"log_id,omitempty"`
	Records uint64 `json:"records,omitempty"`
}

// VaultStatus describes the vault.
type VaultStatus struct {
	State VaultState `json:"state"`
	Epoch uint64     `json:"epoch"`
	Path  string     `json:"path"`
}

// ConfigStatus describes the configuration in force.
type ConfigStatus struct {
	Path     string `json:"path"`
	Approval string `json:"approval"`
	Error    string `json:"error,omitempty"` // the last reload failed: the previous policy stays
}

// Counts are sizes of the gateway's state.
type Counts struct {
	Keys   int `json:"keys"`
	Runs   int `json:"runs"`
	Grants int `json:"grants"`
	Cards  int `json:"cards"`
}

// RunPrepare asks for a run's socket ("postern run").
type RunPrepare struct {
	Label string `json:"label,omitempty"`
}

// RunPrepared answers RunPrepare.
type RunPrepared struct {
	ID     string `json:"id"`
	Socket string `json:"socket"`
}

// RunStart reports the launched process.
type RunStart struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
}

// CardsArgs asks for the pending cards; with Wait, the call returns when
// the list changes after Version (or after WaitFor).
type CardsArgs struct {
	Wait    bool          `json:"wait,omitempty"`
	Version uint64        `json:"version,omitempty"`
	WaitFor time.Duration `json:"wait_for,omitempty"`
}

// CardsResult lists the pending cards.
type CardsResult struct {
	Version uint64               `json:"version"`
	Cards   []approvals.CardView `json:"cards"`
}

// AnswerArgs decides a card.
type AnswerArgs struct {
	ID       string `json:"id"`
	Decision string `json:"decision"` // once, session, deny
	Subject  *int   `json:"subject,omitempty"`
}

// SessionsResult lists runs and grants.
type SessionsResult struct {
	Runs   []approvals.RunState  `json:"runs"`
	Grants []approvals.GrantView `json:"grants"`
}

// JournalArgs selects journal entries.
type JournalArgs struct {
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// ResolveArgs resolves an unknown entry: with Result, by hand; without, by
// reading the remote markers.
type ResolveArgs struct {
	ID         string `json:"id"`
	Result     string `json:"result,omitempty"`
	ExitStatus *int   `json:"exit_status,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
}

// RevokeArgs names what to revoke: a grant id or a run id (Target), or
// every grant (All).
type RevokeArgs struct {
	Target string `json:"target,omitempty"`
	All    bool   `json:"all,omitempty"`
}

// RevokeResult says how many grants ended.
type RevokeResult struct {
	Revoked int `json:"revoked"`
}

func (g *Gateway) journalOrErr() (*journal.Journal, error) {
	if g.journal == nil {
		return nil, control.Errorf("not_found", "the bastion is not enabled in this gateway ([bastion] enabled = true)")
	}
	return g.journal, nil
}

func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, control.Errorf("usage", "malformed request: %v", err)
	}
	return v, nil
}

// LockResult answers "lock".
type LockResult struct {
	Already bool `json:"already_locked,omitempty"`
}

// UnlockArgs carries a passphrase, or a vault data key exported from the
// OS keychain, to the gateway.
type UnlockArgs struct {
	Passphrase []byte `json:"passphrase,omitempty"`
	DataKey    []byte `json:"data_key,omitempty"`
}

func (g *Gateway) handlers() map[string]control.Handler {
	return map[string]control.Handler{
		"status": func(context.Context, *procid.Peer, json.RawMessage) (any, error) {
			return g.Status(), nil
		},
		"lock": func(context.Context, *procid.Peer, json.RawMessage) (any, error) {
			// Idempotent for the command line; ssh-add -x on a locked
			// agent fails, as with ssh-agent.
			if state, _ := g.vault.State(); state == StateLocked {
				return LockResult{Already: true}, nil
			}
			return LockResult{}, g.vault.Lock(nil)
		},
		"unlock": func(_ context.Context, _ *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[UnlockArgs](raw)
			if err != nil {
				return nil, err
			}
			defer clear(a.Passphrase)
			defer clear(a.DataKey)
			if len(a.DataKey) > 0 {
				dk, err := vault.ParseDataKey(a.DataKey)
				if err != nil {
					return nil, control.Errorf("usage", "%v", err)
				}
				defer dk.Wipe()
				return nil, g.vault.UnlockWithKey(dk)
			}
			return nil, g.vault.Unlock(a.Passphrase)
		},
		"run.prepare": func(_ context.Context, _ *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[RunPrepare](raw)
			if err != nil {
				return nil, err
			}
			run := g.engine.PrepareRun(a.Label, func(id string) string { return control.RunSocket(g.opts.Socket, id) })
			if err := g.serveRun(run); err != nil {
				g.engine.EndRun(run.ID, approvals.ReasonProcessExited)
				return nil, fmt.Errorf("creating the run's socket: %w", err)
			}
			return RunPrepared{ID: run.ID, Socket: run.Socket}, nil
		},
		"run.start": func(_ context.Context, caller *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[RunStart](raw)
			if err != nil {
				return nil, err
			}
			_, err = g.engine.StartRun(a.ID, a.PID, caller)
			return nil, err
		},
		"cards": func(ctx context.Context, _ *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[CardsArgs](raw)
			if err != nil {
				return nil, err
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
			return CardsResult{Version: v, Cards: cards}, nil
		},
		"answer": func(_ context.Context, approver *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[AnswerArgs](raw)
			if err != nil {
				return nil, err
			}
			v, err := approvals.ParseVerdict(a.Decision)
			if err != nil {
				return nil, control.Errorf("usage", "%v", err)
			}
			ans := approvals.Answer{Verdict: v, Subject: -1, Approver: approver.Describe()}
			if a.Subject != nil {
				ans.Subject = *a.Subject
			}
			err = g.engine.Answer(a.ID, ans, approver)
			if errors.Is(err, approvals.ErrSelfApprove) || errors.Is(err, approvals.ErrSameSession) {
				return nil, control.Errorf("denied", "%v", err)
			}
			if errors.Is(err, approvals.ErrNoCard) {
				return nil, control.Errorf("not_found", "card %s: %v", a.ID, err)
			}
			return nil, err
		},
		"sessions": func(context.Context, *procid.Peer, json.RawMessage) (any, error) {
			runs, grants := g.engine.Sessions()
			return SessionsResult{Runs: runs, Grants: grants}, nil
		},
		"journal.list": func(_ context.Context, _ *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[JournalArgs](raw)
			if err != nil {
				return nil, err
			}
			j, err := g.journalOrErr()
			if err != nil {
				return nil, err
			}
			if a.ID != "" {
				e, err := j.Get(a.ID)
				if err != nil {
					return nil, control.Errorf("not_found", "%v", err)
				}
				return []*journal.Entry{e}, nil
			}
			return j.List(journal.ListOptions{Status: a.Status, Limit: a.Limit})
		},
		"journal.resolve": func(ctx context.Context, peer *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[ResolveArgs](raw)
			if err != nil {
				return nil, err
			}
			if _, err := g.journalOrErr(); err != nil {
				return nil, err
			}
			if a.Result != "" {
				return g.bastion.ResolveByHand(a.ID, journal.Resolution{Result: a.Result, ExitStatus: a.ExitStatus, Evidence: a.Evidence})
			}
			return g.bastion.Resolve(ctx, a.ID, peer)
		},
		"revoke": func(_ context.Context, _ *procid.Peer, raw json.RawMessage) (any, error) {
			a, err := decode[RevokeArgs](raw)
			if err != nil {
				return nil, err
			}
			if a.All {
				return RevokeResult{Revoked: g.engine.RevokeAll()}, nil
			}
			if a.Target == "" {
				return nil, control.Errorf("usage", "name a grant or a run to revoke, or revoke all")
			}
			n, err := g.engine.Revoke(a.Target)
			if err != nil {
				return nil, control.Errorf("not_found", "%v", err)
			}
			return RevokeResult{Revoked: n}, nil
		},
	}
}

// Status reports the gateway's state.
func (g *Gateway) Status() Status {
	state, epoch := g.vault.State()
	ids, _ := g.keys.Identities()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{
		BootID:  g.bootID,
		PID:     os.Getpid(),
		Started: g.started.UTC().Format("2006-01-02T15:04:05Z"),
		Socket:  g.opts.Socket,
		Vault:   VaultStatus{State: state, Epoch: epoch, Path: g.vaultPath},
		Config:  ConfigStatus{Path: g.configPath, Approval: g.config.Approval},
		Counts:  Counts{Keys: len(ids)},
	}
	st.Counts.Runs, st.Counts.Grants, st.Counts.Cards = g.engine.Counts()
	if g.audit != nil {
		st.Audit = AuditStatus{Enabled: true, Path: g.audit.Path(), LogID: g.audit.LogID(), Records: g.audit.Head().Seq + 1}
	} else if _, err := audit.LoadSetup(g.stateDir); err == nil {
		st.Audit.SetUp = true
	}
	if g.configErr != nil {
		st.Config.Error = g.configErr.Error()
	}
	return st
}
