package main

import (
	"errors"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/keychain"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// Hints are the advice printed after an error ("postern: hint: …"): which
// command or flag to use next. Libraries and the gateway say what failed;
// naming the command that helps is the command line's job, done here.

// hinted is an error that carries its own hint.
type hinted struct {
	error
	hint string
}

func (h *hinted) Unwrap() error { return h.error }

// withHint attaches hint to err.
func withHint(err error, hint string) error { return &hinted{err, hint} }

// hintFor returns the hint for err from command name ("revoke"), or "".
func hintFor(name string, err error) string {
	if h, ok := errors.AsType[*hinted](err); ok {
		return h.hint
	}
	switch {
	case errors.Is(err, api.ErrNoGateway):
		// Not "postern agent" alone: it serves a socket of its own, which
		// the next command does not find unless its lines are eval'ed.
		return `start the gateway with eval "$(postern agent --ensure)", which serves the well-known socket and sets $SSH_AUTH_SOCK, or name a running one's agent socket with --socket`
	case errors.As(err, new(*api.RunSocketError)):
		return `ask your user to run it outside the run; "postern why" works inside it`
	case errors.Is(err, api.ErrBadConfig):
		return "fix the file (postern.toml(5)): a gateway does not start with it"
	case errors.Is(err, api.ErrNoAnswer):
		return `"postern status" says when it answers again; a change asked of it may or may not have been made`
	case errors.Is(err, api.ErrNoAuditLog):
		return `"postern vault init" sets one up`
	case errors.Is(err, api.ErrAuditLogFailed), api.HasCode(err, api.CodeAuditFailed):
		// Read with the vault, the log was held to the anchor and the
		// first key the vault keeps: so is it by verify --vault.
		return `"postern audit verify --vault" names the first bad record; with the gateway stopped, "postern audit new" moves the log and its keys aside and starts a new one`
	case errors.Is(err, api.ErrAuditLogDamaged):
		return `"postern audit verify" names the first bad record; with the gateway stopped, "postern audit new" moves the log and its keys aside and starts a new one`
	case errors.Is(err, api.ErrAuditLogHeld) && name == "agent":
		// It may serve another socket than the well-known one, which
		// is all --ensure looks at: this may be --ensure failing.
		return `another gateway runs on this state directory's vault and audit log: eval "$(postern agent --ensure -a SOCKET)" uses it, SOCKET its agent socket (without -a, --ensure uses the well-known one), and "postern status --socket SOCKET" shows it; stop it to start this one`
	case errors.Is(err, api.ErrAuditLogHeld):
		return "the gateway that holds it does not answer at $SSH_AUTH_SOCK: name its agent socket with --socket, or stop it"
	case errors.Is(err, api.ErrJournalBusy):
		return "the gateway that holds it does not answer at $SSH_AUTH_SOCK: name its agent socket with --socket"
	case errors.Is(err, api.ErrNoBastionSocket):
		return "pass --socket"
	case errors.As(err, new(*confine.ErrLinkInWritable)):
		return `replace the link with what it points to (a .git link with a file holding "gitdir: TARGET"), or start the run from another directory`
	case errors.As(err, new(*confine.UnavailableError)):
		return `"postern run --no-sandbox" runs it unconfined, and every card for it says so`
	case errors.Is(err, api.ErrVaultExists):
		return `"postern unlock" opens it, "postern vault add" adds keys to it and "postern vault passwd" changes its passphrase`
	case errors.Is(err, keychain.ErrDismissed):
		return "unlock the keychain in your desktop session and try again, or unlock with the vault's passphrase"
	case errors.Is(err, keychain.ErrUnavailable):
		return "unlock with the vault's passphrase instead: --remember, --keychain and --forget need the OS keychain (on Linux a Secret Service, such as gnome-keyring or KeePassXC, on the session bus)"
	case errors.Is(err, vault.ErrNotExist):
		return `"postern vault init" creates one`
	case api.HasCode(err, api.CodeVaultGone):
		return `put the vault file back where it was ("postern status" names the path), or restart the gateway, which then forgets the lock`
	case api.HasCode(err, api.CodeStaleKey):
		return "unlock with the passphrase and --remember"
	case api.HasCode(err, api.CodeRolledBack), errors.Is(err, vault.ErrRolledBack):
		return "if you put that copy back on purpose (a restore from backup), remove the .generation file beside the vault, restart a gateway that read the later one, then try again"
	case api.HasCode(err, api.CodeAuditRolledBack):
		return `"postern audit verify --vault" says the same: put the newer log back (with its audit.key and audit.anchor); the vault does not unlock over an older copy. If the newer log is lost, stop the gateway and run "postern audit new"`
	case api.HasCode(err, api.CodeJournalDamaged):
		return `look at the journal file, then "postern journal new" keeps it aside and starts a new journal`
	case api.HasCode(err, api.CodeNoResources):
		return "nothing was decided: try again once the gateway has descriptors free; its log names what ran it out, and a program holding many connections to the agent can be closed, or the limit raised (ulimit -n where it starts, LimitNOFILE= in its systemd unit)"
	case api.HasCode(err, api.CodeLocked):
		return `run "postern unlock"`
	case api.HasCode(err, api.CodeNoKeys):
		return `unlock the vault with "postern unlock", or add a key with ssh-add`
	case api.HasCode(err, api.CodeCorrupt) && name == "hosts":
		return "look at the file: mend it, restore it from a backup, or move it aside to start an empty inventory"
	case errors.Is(err, api.ErrNoBastion):
		return `"postern status" says whether the gateway runs and serves the bastion; ` + enableBastion()
	case api.HasCode(err, api.CodeNoBastion), errors.Is(err, api.ErrNoJournal):
		return enableBastion()
	case api.HasCode(err, api.CodeNoMarkers):
		return `inspect the host yourself, then record what you found with "postern journal resolve ID" and --ran STATUS, --not-started or --still-running`
	case api.HasCode(err, api.CodeNotFound), errors.Is(err, vault.ErrKeyNotFound), errors.Is(err, vault.ErrNoKeyForCert):
		return notFoundHints[name]
	case api.HasCode(err, api.CodeUsage):
		// A usage error the gateway found: as one found here, exit 2
		// comes with the command's help.
		return `run "postern ` + name + ` --help" for its usage`
	}
	return ""
}

// notFoundHints say, per command, where to find what exists.
var notFoundHints = map[string]string{
	"approve": `"postern approve --list" shows the pending cards`,
	"deny":    `"postern approve --list" shows the pending cards`,
	"revoke":  `"postern sessions" lists them`,
	"journal": `"postern journal list" shows the entries`,
	"unlock":  `"postern vault init" creates one`,
	"vault":   `"postern vault list" shows the keys`,
	"hosts":   `"postern hosts list" shows the inventory`,
}

// enableBastion says how to have the gateway serve the bastion: enable
// it in postern.toml, or, where the file enables it already, restart the
// gateway, which read the file before.
func enableBastion() string {
	if path, err := xdg.ConfigFile(); err == nil {
		if cfg, err := config.Load(path); err == nil && cfg.Bastion.Enabled {
			return path + " enables the bastion: restart the gateway, which started before it did"
		}
	}
	return "set enabled = true in the [bastion] table of postern.toml (see postern.toml(5)), then restart the gateway"
}
