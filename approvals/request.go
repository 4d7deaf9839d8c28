package approvals

import (
	"context"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/procid"
)

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
	Kind ChannelKind
	Run  string // the run id, for ChannelRun
}

// ChannelKind names a way in; it is recorded as the channel of an event.
type ChannelKind string

const (
	ChannelAgent   ChannelKind = "agent"   // the main agent socket
	ChannelRun     ChannelKind = "run"     // a run's own agent socket
	ChannelBastion ChannelKind = "bastion" // the bastion, for a relayed command
)

// Key describes the key a request wants to use.
type Key struct {
	Fingerprint string // SHA256:…
	Comment     string
	// Comments returns the comments the agent holds the same key under
	// in its other copies (the vault's behind one added again with
	// ssh-add, a certificate's, the upstream agent's): a rule on a comment
	// is a rule on the key, whichever copy signs. It is called only when
	// a rule names keys by comment, not on every request; nil: none.
	Comments func() []string
	Type     string
	Confirm  bool // added with ssh-add -c: confirm every use
	Touch    bool // a FIDO key that waits for a touch when it signs
	// Upstream is set for a key the upstream agent holds and signs with,
	// once the gateway decided (postern agent --upstream), and
	// UpstreamSocket is that agent's socket.
	Upstream       bool
	UpstreamSocket string
	// Application is a FIDO key's application (the origin it was made
	// for, "ssh:" for SSH), as its public key says: whoever added the key
	// chose it.
	Application string
	// Cert describes the certificate the request names, if it names one.
	Cert *Cert
}

// Cert is a certificate as a card shows it. Whoever added it chose every
// field but the CA's fingerprint, which the CA's signature vouches for.
type Cert struct {
	KeyID      string   `json:"key_id"`
	Principals []string `json:"principals"`
	// CA is the fingerprint of the key that signed it, empty where the
	// signature does not verify (the requester made the certificate up).
	CA string `json:"ca"`
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

// Fingerprint returns the SHA256 fingerprint of the verified host key
// (of the key a host certificate certifies, as the host inventory and
// ssh-keygen -l give it).
func (d *Destination) Fingerprint() string {
	return ssh.FingerprintSHA256(inventory.HostKey(d.HostKey))
}

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
	// MessageHash is the hash of an SSHSIG signature's message, as the
	// data to sign carries it ("sha512:HEX"): recorded with the request.
	MessageHash string
	// Message finds the SSHSIG signature's message, a file whose hash is
	// the one signed (nil: none found), for a card only: it reads files.
	Message func() *SignedMessage
	// Forwarded is set when the request travels through a forwarded agent
	// connection (a session-bind with is_forwarding), whatever it signs.
	Forwarded bool
	// Relay is how a bastion request's session runs on the host, read by
	// the bastion from the session's own request; Command is the command
	// line (RelayExec) or the subsystem's name (RelaySubsystem), exactly
	// as the bastion will send it (verified: the bastion relays it), and
	// empty for a shell. Terminal is set when the client asked for one.
	Relay    Relay
	Command  []byte
	Terminal bool
	// ProbeOf is the journal entry whose remote markers a RelayProbe
	// request reads.
	ProbeOf string
	// RetryOf describes an earlier, identical command whose outcome is
	// unknown: a retry always needs a person, on a card that shows it.
	RetryOf string
	// Running describes an identical command still running: running it a
	// second time at once needs a person too, on a card that says so.
	Running string
	// RetryEntry is that earlier command's journal entry id.
	RetryEntry string
	// Action is what an allow leads to: a signature (the default) or a
	// command on an already authenticated bastion connection.
	Action Action
	// Overlap lets Decide return an allow before its record is written,
	// so that the caller prepares the action meanwhile (sends the request
	// to the device that signs): the caller must then have
	// Decision.Recorded return nil before the action takes effect (the
	// signature leaves). Without it, Decide returns once the record is
	// durable.
	Overlap bool
	// inventory is what the host inventory gave Dest when the request
	// was decided, for its records: looked up once.
	inventory *hostNames
}

// hostNames is what the host inventory calls a host.
type hostNames struct{ names, classes []string }

// Relay is the kind of session a bastion request runs on the host. The
// card names a command by it, not by the command's bytes: no command
// line can read as a shell or a subsystem.
type Relay string

const (
	RelayNone      Relay = ""          // not a bastion request
	RelayExec      Relay = "exec"      // a command line
	RelayShell     Relay = "shell"     // a login shell: its commands are not known in advance
	RelaySubsystem Relay = "subsystem" // a subsystem, such as sftp
	// RelayProbe is postern's own probe of a journal entry's remote
	// markers (postern journal resolve): Command is the probe, ProbeOf
	// the entry.
	RelayProbe Relay = "probe"
)

// Action is what an allowed request leads to.
type Action int

const (
	// ActionSign: a signature (recorded as sign).
	ActionSign Action = iota
	// ActionCommand: a command on an already authenticated bastion
	// connection, with no signature (recorded as command_approved).
	ActionCommand
)

// A Decision answers a Request.
type Decision struct {
	Allow bool
	Mode  audit.Mode
	// Reason is one of audit's decision reasons: session (a live grant
	// covered it), approved_once, approved_session, policy_none,
	// policy_deny, denied, timeout, cooldown, vault_locked,
	// vault_state_changed…
	Reason audit.Reason
	Grant  string // the grant that covered the request, if any
	// Card and CardReason name the card a person answered, and why it was
	// shown (one of audit's card reasons: new, per_call,
	// REAUTH_REQUIRED gateway_restarted…).
	Card       string
	CardReason audit.Reason

	// Run is the run the decision is about, when it is one: the run a
	// grant covered, or the subject a card was shown for.
	Run string

	chain  procid.Chain // the requester's chain, when it was read
	record *allowRecord // the allow's record, not yet written (Request.Overlap)
	// because says why the policy gave the mode of a decision it made
	// without a person (policy_deny, policy_none), as postern check
	// says it: for postern why.
	because string
}

// Recorded makes the record of an allowed decision durable and returns
// nil, or returns why it was not recorded: then the action must not take
// effect, and the decision counts as refused (audit_failed). It writes
// the record in the caller's goroutine, unless Begin started it: a
// caller that has sent its request to a device returns to it once the
// record is durable. There is something to write only when the Request
// set Overlap; otherwise Decide wrote it, and Recorded returns nil at
// once. Calls after the first return what the first did; a Decision is
// for one goroutine.
func (d Decision) Recorded() error {
	if d.record == nil {
		return nil
	}
	return d.record.recorded()
}

// Begin starts making the record of an allowed decision durable on
// another goroutine, for a caller whose action runs in its own goroutine
// meanwhile (a token that signs); Recorded then waits for it.
func (d Decision) Begin() {
	if d.record != nil {
		d.record.begin(false)
	}
}

// Enter makes the record of an allowed decision durable here when no
// other record is being written, and otherwise queues it behind the write
// under way and returns at once, for a caller whose action takes less time
// than handing the record to another goroutine would (a key in memory
// signs while the write under way goes on); Recorded then waits for it.
func (d Decision) Enter() {
	if d.record != nil {
		d.record.begin(true)
	}
}

// A Decider decides requests. The agent protocol and the bastion ask one
// Decider, so both follow the same rules.
type Decider interface {
	Decide(ctx context.Context, r *Request) Decision
	// Refused records a request refused before a decision was asked for.
	Refused(r *Request, reason audit.Reason)
}
