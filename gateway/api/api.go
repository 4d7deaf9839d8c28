// Package api is the contract between the postern command line and a
// running gateway, and the command line's only door to it.
//
// A call is one JSON [Request] line and one JSON [Response] line over the
// gateway's control socket, which sits beside its agent socket
// ([ControlSocket]); internal/control carries the lines and identifies the
// caller from kernel evidence. A stream (following the journal or the
// pending cards) answers with a line per change until the client hangs
// up: [Client.FollowCards] gets every pending card first, then only what
// changed ([CardsDelta]), and a [CardBoard] keeps the follower's copy,
// noticing a change that went missing. Every operation is an [Op] constant with
// its argument and result types in this package, and [Client] has one
// method per operation:
//
//	c := api.NewClient(os.Getenv("SSH_AUTH_SOCK"))
//	st, err := c.Status(ctx)
//
// An error the gateway returns is an [*Error] whose [Code] classifies it
// (denied, usage, locked, ...), so that the command line can pick its exit
// status and add hints without parsing messages.
//
// The gateway owns its state files. What the command line may do with
// them while no gateway runs is here too, and is read-only but for two
// things, each of which writes its audit trail with it: [InitVault]
// creates the vault and sets up the audit log, together, and
// [ChangeVault] changes the vault and records the change in the log (a
// running gateway does that itself: [Client.ChangeVault]).
// [VerifyAuditLog] checks the audit log with no key,
// [ReadAuditLog] decrypts it with the identity the vault keeps, and
// [OpenJournalFile] reads the bastion's journal. Changing the journal
// takes a running gateway, which records the change in the audit log.
// [BastionSocket] and [ControlSocket] are where the gateway listens, for
// both sides.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Op names an operation of the control protocol.
type Op string

// The operations a gateway answers.
const (
	OpStatus         Op = "status"          // no arguments; Status
	OpLock           Op = "lock"            // no arguments; LockResult
	OpUnlock         Op = "unlock"          // UnlockArgs; no result
	OpRunPrepare     Op = "run.prepare"     // RunPrepare; RunPrepared
	OpRunStart       Op = "run.start"       // RunStart; no result
	OpCards          Op = "cards"           // CardsArgs; CardsResult
	OpAnswer         Op = "answer"          // AnswerArgs; AnswerResult
	OpSessions       Op = "sessions"        // no arguments; SessionsResult
	OpJournalList    Op = "journal.list"    // JournalArgs; []*JournalEntry
	OpJournalResolve Op = "journal.resolve" // ResolveArgs; *JournalEntry
	OpRevoke         Op = "revoke"          // RevokeArgs; RevokeResult
	OpVaultChange    Op = "vault.change"    // VaultChange; VaultChanged
	OpHosts          Op = "hosts"           // no arguments; HostsResult
	OpHostsAdd       Op = "hosts.add"       // HostsAddArgs; HostsResult
	OpHostsRemove    Op = "hosts.remove"    // HostsRemoveArgs; HostsResult
	OpCheck          Op = "check"           // CheckArgs; CheckResult
	OpJournalNew     Op = "journal.new"     // no arguments; JournalNewResult
	OpVaultList      Op = "vault.list"      // VaultListArgs; VaultKeys
	// OpJournalFollow is a stream: a first empty response once following,
	// then one *JournalEntry per change, until the client hangs up (or an
	// error response ends it).
	OpJournalFollow Op = "journal.follow" // no arguments; a stream of *JournalEntry
	// OpAuditRead is a stream: a first empty response, then the events of
	// the gateway's audit log in order, in batches, the last batch with
	// End set (a stream that ends without it was cut short). The gateway
	// waits for a client that reads slowly as long as it stays connected.
	OpAuditRead Op = "audit.read" // AuditReadOptions; a stream of *AuditBatch
	// OpCardsFollow is a stream: a first empty response, then a
	// CardsDelta per change of the pending cards, the first one a
	// snapshot of them all, until the client hangs up; a change too
	// large for a line comes in parts, each but the last marked More.
	OpCardsFollow Op = "cards.follow" // CardsFollowArgs; a stream of CardsDelta
)

// timeouts bound the calls that need another time limit than
// defaultTimeout, unless the caller's context ends sooner. An unlock
// waits out the key derivation and the delay after a wrong passphrase;
// resolving an entry opens a connection to its host. A stream (0) lasts
// as long as its caller wants.
var timeouts = map[Op]time.Duration{
	OpStatus:         10 * time.Second,
	OpUnlock:         2 * time.Minute,
	OpCards:          2 * time.Minute,
	OpJournalResolve: 3 * time.Minute,
	OpVaultChange:    2 * time.Minute,
	OpCheck:          10 * time.Second,
	OpJournalFollow:  0, // until the caller's context ends
	OpAuditRead:      0, // as long as the log takes to read
	OpCardsFollow:    0,
}

// defaultTimeout bounds every other call, so that none waits without end
// for a gateway that never answers (stopped, or something else at its
// socket).
// (A variable: tests shorten it.)
var defaultTimeout = 30 * time.Second

// timeLimit is op's time limit; 0 for a stream.
func timeLimit(op Op) time.Duration {
	if d, ok := timeouts[op]; ok {
		return d
	}
	return defaultTimeout
}

// Code classifies an error the gateway returns.
type Code string

// The error codes. An error without a code is a plain failure.
const (
	// CodeUsage: the request was malformed or does not apply (an unknown
	// operation, unlocking what is not locked).
	CodeUsage Code = "usage"
	// CodeDenied: refused by policy or by an approval rule, such as an
	// answer from inside the requesting run.
	CodeDenied Code = "denied"
	// CodeLocked: the gateway is locked already, or locked when what was
	// asked needs its vault unlocked (OpAuditRead).
	CodeLocked Code = "locked"
	// CodeNotFound: the card, grant, run, entry or vault named does not
	// exist (any more).
	CodeNotFound Code = "not_found"
	// CodeNoBastion: the gateway serves no bastion ([bastion] enabled is
	// not set), so it keeps no journal.
	CodeNoBastion Code = "no_bastion"
	// CodeWrongPassphrase: the passphrase does not open the vault.
	CodeWrongPassphrase Code = "wrong_passphrase"
	// CodeStaleKey: the data key from the OS keychain no longer opens
	// the vault (its passphrase changed).
	CodeStaleKey Code = "stale_key"
	// CodeNoKeys: the gateway holds no key to act with (its vault is
	// locked or empty, and none was added with ssh-add).
	CodeNoKeys Code = "no_keys"
	// CodeNoMarkers: the journal entry ran without remote markers, so
	// only a person who looked at the host can resolve it.
	CodeNoMarkers Code = "no_markers"
	// CodeCorrupt: the vault file, or the host inventory's, is damaged or
	// was edited.
	CodeCorrupt Code = "corrupt"
	// CodeRolledBack: the vault file is an older copy of one saved since.
	CodeRolledBack Code = "rolled_back"
	// CodeVaultGone: the gateway was locked while it had a vault, whose
	// file has gone since: only that vault's passphrase unlocks it, once
	// the file is back (or a restart forgets the lock).
	CodeVaultGone Code = "vault_gone"
	// CodeAuditRolledBack: the audit log ends before the anchor sealed
	// into the vault: an older copy of it was put back in place.
	CodeAuditRolledBack Code = "audit_rolled_back"
	// CodeJournalDamaged: the bastion's command journal is damaged; the
	// bastion refuses commands until a person decides (OpJournalNew).
	CodeJournalDamaged Code = "journal_damaged"
	// CodeAuditFailed: a record of the audit log failed verification as
	// it was read (OpAuditRead).
	CodeAuditFailed Code = "audit_failed"
	// CodeNoResources: the gateway could not check the processes a
	// request needs checked (the requester, an approver, a run), for want
	// of descriptors or memory; it refused the request, and the same
	// request may succeed once they are free again.
	CodeNoResources Code = "no_resources"
)

// Request is one call.
type Request struct {
	Op   Op              `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers a Request: an error with its code, or a result.
type Response struct {
	Error  string          `json:"error,omitempty"`
	Code   Code            `json:"code,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Error is an error returned by the gateway.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf builds an Error with a code.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// HasCode reports whether err is an Error with code c.
func HasCode(err error, c Code) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.Code == c
}
