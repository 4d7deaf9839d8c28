package audit

import (
	"fmt"
	"strings"
)

// The words of postern's audit log, declared once. Every package that
// writes or reads events uses these; the strings are the log's format and
// never change meaning. A word retired from the format stays readable
// through [Reason.Canonical].

// EventType names what an event records.
type EventType string

// Event types, with the fields each carries.
const (
	EventGatewayStarted   EventType = "gateway_started"   // BootID
	EventGatewayStopped   EventType = "gateway_stopped"   // BootID
	EventGatewayRestarted EventType = "gateway_restarted" // PrevBootID, BootID
	EventVaultLocked      EventType = "vault_locked"      // VaultEpoch (the new epoch), Reason (an epoch change reason)
	EventVaultUnlocked    EventType = "vault_unlocked"    // VaultEpoch (the new epoch), Reason (an epoch change reason)
	EventRunRegistered    EventType = "run_registered"    // Run, Process, Label
	EventCardShown        EventType = "card_shown"        // Card, Run, Key, Dest, Mode, Reason (a card reason)
	EventSessionApproved  EventType = "session_approved"  // Run, Grant, Process, Key, Dest, Approver
	EventSessionEnded     EventType = "session_ended"     // Run, Grant, Reason (an end reason); no Grant for a run that ended with none
	EventActionDenied     EventType = "action_denied"     // Run, Reason, Key, Dest
	EventSign             EventType = "sign"              // Run, Grant or Mode per-call, Key, Dest, Reason (a decision reason)
	// EventCommandApproved records a bastion command allowed on an
	// already authenticated connection (no signature follows).
	EventCommandApproved EventType = "command_approved" // as sign
	EventPolicyReloaded  EventType = "policy_reloaded"  // Detail
	// The vault's changes, recorded before the vault file is written:
	// Approver is who asked (the command line's process), Detail holds
	// the generation the change writes and, for a key, its comment.
	EventVaultKeyAdded          EventType = "vault_key_added"          // Key, Approver, Detail
	EventVaultCertificateAdded  EventType = "vault_certificate_added"  // Key (the certified key), Approver, Detail (key_id, type, ca, principals)
	EventVaultKeyRemoved        EventType = "vault_key_removed"        // Key, Approver, Detail
	EventVaultPassphraseChanged EventType = "vault_passphrase_changed" // Approver, Detail (kdf)
	// EventVaultChangeNotWritten: the write of the change just recorded
	// failed (a full disk, another writer changed the file) and left the
	// vault as it was: the events before it with the same generation
	// (Detail generation, error; Approver) did not happen, and the next
	// change writes that generation again. A change a crash cut short
	// after it was recorded leaves no such event: of the changes that
	// name one generation, only the last can have been written.
	EventVaultChangeNotWritten EventType = "vault_change_not_written"
	// The agent's own keys, as clients change them (ssh-add, ssh-add -s,
	// an upstream agent's keys when upstream_changes = "forward") and as
	// they end: Key, Run (the run whose socket added it), Approver (who
	// asked: the client's process; none when the agent dropped the key),
	// Detail (comment; key_holder "upstream" or "vault" for a key the
	// agent did not add; for an add: confirm, expires, destinations,
	// provider, certificate). An add is recorded before the key can be
	// used, and refused when it cannot be; a removal is recorded once
	// made (Reason: a key removal reason). The upstream agent's ssh-add
	// -D names no key.
	EventAgentKeyAdded   EventType = "agent_key_added"
	EventAgentKeyRemoved EventType = "agent_key_removed"
	// The host inventory changed (postern hosts): Approver, Detail (host,
	// class, previous_class, keys, source).
	EventHostAdded   EventType = "host_added"
	EventHostRemoved EventType = "host_removed"
	// A configuration change that loosens authority waits for a person:
	// shown on a policy change card (Card, Detail: the changes), then
	// approved (Card, Approver), denied by a person (Card, Approver,
	// Reason denied), withdrawn unanswered (Card, Reason: a policy card
	// withdrawal reason) or left pending.
	EventPolicyChangePending   EventType = "policy_change_pending"
	EventPolicyChangeApproved  EventType = "policy_change_approved"
	EventPolicyChangeDenied    EventType = "policy_change_denied"
	EventPolicyChangeWithdrawn EventType = "policy_change_withdrawn"
	// EventPolicyRestored: at an unlock, the approved configuration in
	// the state directory, or the host inventory file, was not the one
	// sealed in the vault, which was put back (Detail path; kept_at, the
	// inventory file found).
	EventPolicyRestored EventType = "policy_restored"
	// The bastion's command events; each names its journal entry in
	// Detail.
	EventCommandStarted  EventType = "command_started"
	EventCommandEnded    EventType = "command_ended"
	EventCommandUnknown  EventType = "command_unknown"
	EventCommandResolved EventType = "command_resolved"
	// EventAuditResumed: the log could not be written for a while and
	// refused the events of that time (Detail failed_at, error, refused);
	// reopened, it records that and goes on.
	EventAuditResumed EventType = "audit_resumed"
	// EventJournalDamaged: the bastion's command journal is damaged (Detail
	// path, error); the bastion refuses commands until a person decides.
	EventJournalDamaged EventType = "journal_damaged"
	// EventJournalReplaced: a person had the damaged journal kept aside and
	// a new one started (Detail path, kept_at, damage).
	EventJournalReplaced EventType = "journal_replaced"
	// EventAskpassChanged: the askpass program the gateway pinned as it
	// started (named in gateway_started's Detail askpass and
	// askpass_sha256) was found rewritten or unreadable; askpass
	// approvals are off until the gateway restarts (Detail path, error).
	EventAskpassChanged EventType = "askpass_changed"
	// EventCheckpoint is not appended by callers: checkpoints are records of
	// their own. Readers report each one as an event of this type so that
	// projections can show them.
	EventCheckpoint EventType = "checkpoint"
	// EventLogRecovered is appended by Open after it cut a torn tail away.
	// Detail holds offset, bytes, saved_to and reason.
	EventLogRecovered EventType = "log_recovered"
)

// Reason is a short machine-readable word saying why: why a session
// approval ended, why an action was allowed or denied, why a card was
// shown, why the vault epoch changed.
type Reason string

// End reasons: why a session approval (a grant) or a run ended.
const (
	ReasonProcessExited    Reason = "process_exited"    // the run's process exited
	ReasonIdentityMismatch Reason = "identity_mismatch" // the process is not the one identified (a launched pid that is not the caller's child, a requester that changed, before its signature or while its card waited, a requester that left the run whose socket it asks through)
	// ReasonProcessChanged: the run's process executed another program on
	// the same pid (another executable, or the same one with a new address
	// space). Also a card reason: see below.
	ReasonProcessChanged   Reason = "process_changed"
	ReasonGatewayRestarted Reason = "gateway_restarted" // the grant is from another gateway boot
	ReasonVaultLocked      Reason = "vault_locked"      // the vault locked
	// ReasonVaultStateChanged: the vault epoch moved while the vault stayed
	// unlocked (its file changed), or an answer was given across a lock or
	// unlock. Logs written before it spell the end reason vault_changed.
	ReasonVaultStateChanged Reason = "vault_state_changed"
	ReasonRevoked           Reason = "revoked" // postern revoke, or SIGUSR1 (which also removes the agent's keys)
	ReasonExpired           Reason = "expired" // session_lifetime passed; for a key, its lifetime or its certificate's validity
	// ReasonGatewayStopped: the gateway stopped with the grant live (for a
	// key, while it held the key). Sessions infers it for a grant still
	// open when its gateway stopped.
	ReasonGatewayStopped Reason = "gateway_stopped"
	// ReasonUnspecified is what Sessions reports for an end event that
	// carries no reason.
	ReasonUnspecified Reason = "unspecified"
)

// IsEnd reports whether r is an end reason (today's spelling or a
// retired one), not ReasonUnspecified, which says none was recorded.
func (r Reason) IsEnd() bool {
	switch r.Canonical() {
	case ReasonProcessExited, ReasonIdentityMismatch, ReasonProcessChanged, ReasonGatewayRestarted, ReasonVaultLocked,
		ReasonVaultStateChanged, ReasonRevoked, ReasonExpired, ReasonGatewayStopped:
		return true
	}
	return false
}

// Decision reasons: why a request was allowed or denied (sign,
// command_approved, action_denied). A denial may also carry an end
// reason (vault_locked, process_exited, identity_mismatch, …).
const (
	ReasonSession         Reason = "session"          // a live grant covered it
	ReasonApprovedOnce    Reason = "approved_once"    // a person approved this one use
	ReasonApprovedSession Reason = "approved_session" // a person approved the run
	ReasonPolicyNone      Reason = "policy_none"      // the policy signs without asking
	ReasonPolicyDeny      Reason = "policy_deny"      // the policy refuses
	ReasonDenied          Reason = "denied"           // a person denied it
	ReasonTimeout         Reason = "timeout"          // nobody answered the card in time
	ReasonCooldown        Reason = "cooldown"         // an earlier card went unanswered, or cards were denied or withdrawn too fast
	ReasonCardLimit       Reason = "card_limit"       // the run has as many cards up as it may
	ReasonCanceled        Reason = "canceled"         // the requester went away (hung up, exited) while the card waited
	ReasonNoApprover      Reason = "no_approver"      // no console, notification service or askpass could show the card
	ReasonAuditFailed     Reason = "audit_failed"     // the action's event could not be recorded
	ReasonHostKeyRevoked  Reason = "host_key_revoked" // known_hosts marks the destination's key @revoked
	ReasonJournalFailed   Reason = "journal_failed"   // the bastion's command journal could not be read or written
	// ReasonOutOfResources: the gateway ran out of descriptors or memory
	// and could not check the requester or its run against live
	// evidence; the run goes on, and is checked again at its next request.
	ReasonOutOfResources Reason = "out_of_resources"
	// Refusals before any decision is asked for.
	ReasonSessionBindFailed Reason = "session_bind_failed" // an earlier session-bind failed on the connection
	ReasonKeyNotHeld        Reason = "key_not_held"
	ReasonMalformedRequest  Reason = "malformed_request"
	ReasonBindingViolation  Reason = "binding_violation" // the request broke the connection's session binding
	ReasonSigningFailed     Reason = "signing_failed"
	// After an allow: the security key, token or upstream agent that
	// holds the key did not answer within card_timeout (nobody touched
	// or confirmed it).
	ReasonTouchTimeout Reason = "touch_timeout"
)

// Card reasons: why a card was shown (card_shown, and the card's reason
// field). A re-approval's reason is REAUTH_REQUIRED followed by what
// changed; a denied re-approval is recorded with what changed alone.
const (
	ReasonCardNew      Reason = "new"              // a first approval
	ReasonPerCall      Reason = "per_call"         // the use asks every time
	ReasonRetryUnknown Reason = "retry_of_unknown" // a retry of a command whose outcome is unknown
	// ReasonIdenticalRunning: the same command (host key, user and
	// command) is still running on the bastion.
	ReasonIdenticalRunning Reason = "identical_running"
	ReasonPolicyChange     Reason = "policy_change" // the configuration changed and loosens authority
	// ReasonProcessChanged (declared with the end reasons), as a card's
	// reason: the approved process executed another program, or ended and
	// a new one has the same label or executable.

	ReasonReauthProcessChanged    Reason = reauthRequired + ReasonProcessChanged
	ReasonReauthGatewayRestarted  Reason = reauthRequired + ReasonGatewayRestarted
	ReasonReauthVaultStateChanged Reason = reauthRequired + ReasonVaultStateChanged
)

const reauthRequired = "REAUTH_REQUIRED "

// Reauth returns what changed, for the reason of a re-approval card
// ("REAUTH_REQUIRED gateway_restarted" gives gateway_restarted).
func (r Reason) Reauth() (Reason, bool) {
	why, ok := strings.CutPrefix(string(r), reauthRequired)
	return Reason(why), ok
}

// Policy card withdrawal reasons: why a policy change card went down
// unanswered (policy_change_withdrawn).
const (
	// ReasonPolicyReplaced: the configuration file changed again and
	// still loosens; a new card shows the change as it is now.
	ReasonPolicyReplaced Reason = "replaced"
	// ReasonNoLongerLoosens: the configuration file changed again and
	// loosens nothing against the approved configuration: it is in force.
	ReasonNoLongerLoosens Reason = "no_longer_loosens"
	// ReasonApprovedRestored: an unlock put back the approved
	// configuration sealed in the vault, which the card was not judged
	// against, and the file does not read: the approved one is in force.
	ReasonApprovedRestored Reason = "approved_restored"
)

// Key removal reasons: why a key left the agent (agent_key_removed),
// besides expired (its lifetime, ssh-add -t or postern agent -t, or
// its certificate's validity ended) and revoked (SIGUSR1).
const (
	ReasonRemoved Reason = "removed" // a client asked (ssh-add -d, -D, -e)
)

// Epoch change reasons: why the vault epoch moved (vault_locked and
// vault_unlocked events), besides audit_failed (a vault_locked that undid
// an unlock whose vault_unlocked the log could not record).
const (
	ReasonLock             Reason = "lock"
	ReasonUnlock           Reason = "unlock"
	ReasonVaultFileRemoved Reason = "vault file removed"
	ReasonVaultFileCreated Reason = "vault file created"
	ReasonVaultFileChanged Reason = "vault file changed"
)

// retiredReasons maps words older logs carry to today's.
var retiredReasons = map[Reason]Reason{
	"vault_changed": ReasonVaultStateChanged,
}

// Canonical returns today's word for r: a reason an older log spells
// otherwise is mapped (vault_changed is vault_state_changed); any other
// is returned as it is.
func (r Reason) Canonical() Reason {
	if c, ok := retiredReasons[r]; ok {
		return c
	}
	return r
}

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
