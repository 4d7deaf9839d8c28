package gateway

import (
	"context"
	"encoding/json"
	"os"

	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/procid"
)

// Status is the answer to "postern status".
type Status struct {
	BootID  string       `json:"boot_id"`
	PID     int          `json:"pid"`
	Started string       `json:"started"`
	Socket  string       `json:"socket"`
	Vault   VaultStatus  `json:"vault"`
	Config  ConfigStatus `json:"config"`
	Counts  Counts       `json:"counts"`
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
	Keys int `json:"keys"`
}

// LockResult answers "lock".
type LockResult struct {
	Already bool `json:"already_locked,omitempty"`
}

// UnlockArgs carries a passphrase to the gateway.
type UnlockArgs struct {
	Passphrase []byte `json:"passphrase"`
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
			var a UnlockArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, control.Errorf("usage", "malformed unlock request")
			}
			defer clear(a.Passphrase)
			return nil, g.vault.Unlock(a.Passphrase)
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
	if g.configErr != nil {
		st.Config.Error = g.configErr.Error()
	}
	return st
}
