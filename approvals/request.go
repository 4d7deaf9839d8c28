package approvals

import (
	"context"
	"fmt"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/procid"
)

// Mode is how much approval a use of a key needs.
type Mode string

const (
	// ModeNone signs without asking, like ssh-agent.
	ModeNone Mode = "none"
	// ModeSession asks once per run and lets the approved run's live
	// descendants use the key until the run exits.
	ModeSession Mode = "session"
	// ModePerCall asks for every use, even inside an approved session.
	ModePerCall Mode = "per-call"
	// ModeDeny refuses every use.
	ModeDeny Mode = "deny"
)

// ParseMode checks a mode name from the configuration.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeSession, ModePerCall, ModeDeny:
		return m, nil
	}
	return "", fmt.Errorf("unknown approval mode %q (want none, session, per-call or deny)", s)
}

// Purpose says what a signature is for, as far as the gateway could
// establish it from the data to be signed.
type Purpose string

const (
	// PurposeAuth is an SSH user authentication.
	PurposeAuth Purpose = "auth"
	// PurposeSSHSig is an SSHSIG signature (ssh-keygen -Y sign, git).
	PurposeSSHSig Purpose = "sshsig"
	// PurposeOther is data the gateway could not interpret.
	PurposeOther Purpose = "other"
)

// A Channel is the way a request reached the gateway.
type Channel struct {
	Kind string // "agent" (the main socket), "run" (a run's own socket), "bastion"
	Run  string // the run id, for Kind "run"
}

// Key describes the key a request wants to use.
type Key struct {
	Fingerprint string // SHA256:…
	Comment     string
	Type        string
	Confirm     bool // added with ssh-add -c: confirm every use
}

// Destination is where an authentication goes, established from the host
// key the agent verified through session-bind@openssh.com, never from what
// the client claims.
type Destination struct {
	HostKey    ssh.PublicKey // verified: it signed the session identifier
	User       string        // the account named in the userauth request (the client's claim)
	Forwarding bool          // the agent connection travels through a forwarded socket
	Hops       int           // number of session bindings on the connection
}

// Fingerprint returns the SHA256 fingerprint of the verified host key.
func (d *Destination) Fingerprint() string { return ssh.FingerprintSHA256(d.HostKey) }

// A Request asks whether a process may use a key now.
type Request struct {
	// Requester was verified against live kernel evidence just before the
	// request was decided: still alive, same start time, same executable.
	Requester *procid.Peer
	Channel   Channel
	Key       Key
	Purpose   Purpose
	Dest      *Destination // nil when no verified destination applies
	Namespace string       // the SSHSIG namespace, for PurposeSSHSig
	// Forwarded is set when the request travels through a forwarded agent
	// connection (a session-bind with is_forwarding), whatever it signs.
	Forwarded bool
	// Command is the remote command a bastion request will run, exactly
	// as the bastion will send it (verified: the bastion relays it).
	Command []byte
	// RetryOf describes an earlier, identical command whose outcome is
	// unknown: a retry always needs a person, on a card that shows it.
	RetryOf string
	// Action is what an allow leads to: a signature (the default) or a
	// command on an already authenticated bastion connection.
	Action string
}

// Actions a request can lead to.
const (
	ActionSign    = ""
	ActionCommand = "command"
)

// EventCommandApproved records a bastion command allowed on an already
// authenticated connection (no signature follows).
const EventCommandApproved = "command_approved"

// A Decision answers a Request.
type Decision struct {
	Allow bool
	Mode  Mode
	// Reason is a short machine-readable word: session (a live grant
	// covered it), approved_once, approved_session, policy_none,
	// policy_deny, denied, timeout, cooldown, vault_locked,
	// vault_state_changed…
	Reason string
	Grant  string // the grant that covered the request, if any
	// Card and CardReason name the card a person answered, and why it was
	// shown ("new", "per_call", "REAUTH_REQUIRED gateway_restarted"…).
	Card       string
	CardReason string

	// Run is the run the decision is about, when it is one: the run a
	// grant covered, or the subject a card was shown for.
	Run string
}

// A Decider decides requests. The agent protocol and the bastion ask one
// Decider, so both follow the same rules.
type Decider interface {
	Decide(ctx context.Context, r *Request) Decision
	// Refused records a request refused before a decision was asked for.
	Refused(r *Request, reason string)
}
