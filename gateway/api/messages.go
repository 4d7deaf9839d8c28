package api

import (
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/confine"
)

// Status answers OpStatus ("postern status").
type Status struct {
	BootID  string `json:"boot_id"`
	PID     int    `json:"pid"`
	Started string `json:"started"`
	// Interpreter is the dynamic loader that started the gateway (a
	// build with cgo), which loads what LD_PRELOAD names into it; "" for
	// one static program, as make builds postern on Linux, and on macOS.
	Interpreter string         `json:"interpreter,omitempty"`
	Socket      string         `json:"socket"`
	Vault       VaultStatus    `json:"vault"`
	Config      ConfigStatus   `json:"config"`
	Hosts       HostsStatus    `json:"hosts"`
	Askpass     AskpassStatus  `json:"askpass"`
	Audit       AuditStatus    `json:"audit"`
	Bastion     *BastionStatus `json:"bastion,omitempty"` // nil: the bastion is not enabled
	// Upstream is the upstream agent whose keys the gateway gates; nil
	// for none.
	Upstream *UpstreamStatus `json:"upstream,omitempty"`
	Counts   Counts          `json:"counts"`
	// Approvers are the ways a card can reach a person now. With none
	// reachable, a request that needs a card is refused at once
	// (no_approver).
	Approvers []Approver `json:"approvers"`
	// LastNoApprover is when a request was last refused so.
	LastNoApprover time.Time `json:"last_no_approver,omitzero"`
}

// UpstreamStatus names the upstream agent the gateway gates.
type UpstreamStatus struct {
	Socket string `json:"socket"`
	// Stopped: it is not the one the approved configuration names, and
	// its keys are used no more until the gateway restarts.
	Stopped bool `json:"stopped,omitempty"`
}

// BastionStatus describes the bastion's command journal.
type BastionStatus struct {
	Journal string `json:"journal"`
	// Refusing is why the bastion refuses every command, since Since; ""
	// while it serves.
	Refusing string `json:"refusing,omitempty"`
	Since    string `json:"since,omitempty"`
	// Damaged: the journal is damaged and kept as it is until a person
	// decides (OpJournalNew).
	Damaged bool `json:"damaged,omitempty"`
}

// JournalNewResult answers OpJournalNew: where the damaged journal is
// kept.
type JournalNewResult struct {
	KeptAt string `json:"kept_at"`
}

// Approver is one way to reach a person with a card: the console, a
// desktop notification, an askpass dialog.
type Approver = approvals.ApproverState

// AuditStatus describes the audit log.
type AuditStatus struct {
	Enabled bool `json:"enabled"`
	// SetUp is true when the log is set up but this gateway started before
	// it was: it writes no log until it restarts.
	SetUp   bool   `json:"set_up_after_start,omitempty"`
	Path    string `json:"path,omitempty"`
	LogID   string `json:"log_id,omitempty"`
	Records uint64 `json:"records,omitempty"`
	// Failing is why the log cannot be written, since FailingSince: every
	// action is refused meanwhile (Refused events so far), and the
	// gateway retries the log; "" while it is writable.
	Failing      string `json:"failing,omitempty"`
	FailingSince string `json:"failing_since,omitempty"`
	Refused      uint64 `json:"refused,omitempty"`
	// Anchor is the chain head of the latest checkpoint, in the printable
	// form of FormatAnchor: copy it elsewhere to check the log against.
	Anchor string `json:"anchor,omitempty"`
	// Syslog is the export of events and checkpoints ([audit] syslog).
	Syslog *SyslogStatus `json:"syslog,omitempty"`
}

// SyslogStatus describes the export to syslog.
type SyslogStatus struct {
	Address string `json:"address"`
	Sent    uint64 `json:"sent"`
	Dropped uint64 `json:"dropped"`         // lost while the daemon did not keep up
	Error   string `json:"error,omitempty"` // the connection's last error, until a message goes through
}

// VaultStatus describes the vault.
type VaultStatus struct {
	State VaultState `json:"state"`
	Epoch uint64     `json:"epoch"`
	Path  string     `json:"path"`
	// NoPassword: locked with no vault and no password (postern lock),
	// which postern unlock from outside every run lifts with none.
	NoPassword bool `json:"no_password,omitempty"`
	// EpochError says what is wrong with the epoch file: it could not be
	// read at start (the count went on from above any epoch it could
	// have held), or the last epoch could not be written to it.
	EpochError string `json:"epoch_error,omitempty"`
}

// VaultState is what the gateway reports about the vault.
type VaultState string

const (
	VaultLocked   VaultState = "locked"
	VaultUnlocked VaultState = "unlocked"
	// VaultNone means there is no vault file: the agent holds only keys
	// added with ssh-add, like ssh-agent.
	VaultNone VaultState = "none"
)

// ConfigStatus describes the configuration in force.
type ConfigStatus struct {
	Path string `json:"path"`
	// Approval is the default approval mode in force: while a change
	// waits (Pending), the stricter of the approved and the file's.
	Approval string `json:"approval"`
	Error    string `json:"error,omitempty"` // the last reload failed: the previous policy stays
	// Pending lists how the file loosens the approved configuration,
	// while a policy change card waits; meanwhile the stricter of both is
	// in force.
	Pending []string `json:"pending_changes,omitempty"`
	// Restored says when an unlock found the state directory's approved
	// configuration rewritten and put back the one sealed in the vault.
	Restored string `json:"restored,omitempty"`
	// Defaults: the gateway runs on the defaults, as it started with no
	// file and has put none in force since. A file removed while it runs
	// leaves that file's policy in force, so a missing file alone does
	// not say the defaults are.
	Defaults bool `json:"defaults,omitempty"`
}

// AskpassStatus describes the askpass program the gateway pinned at
// start; Error says why askpass approvals are off.
type AskpassStatus struct {
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Error  string `json:"error,omitempty"`
}

// HostsStatus describes the host inventory in force.
type HostsStatus struct {
	Path  string `json:"path"`
	Count int    `json:"hosts"`
	// Error says why the inventory file could not be read: the gateway
	// then gives no host a name, so every login is asked about as strictly
	// as any host rule could ask.
	Error string `json:"error,omitempty"`
	// Restored says when an unlock found the inventory file rewritten and
	// put back the one sealed in the vault.
	Restored string `json:"restored,omitempty"`
}

// Counts are sizes of the gateway's state.
type Counts struct {
	Keys   int `json:"keys"`
	Runs   int `json:"runs"`
	Grants int `json:"grants"`
	Cards  int `json:"cards"`
}

// LockResult answers OpLock.
type LockResult struct {
	Already bool `json:"already_locked,omitempty"`
}

// UnlockArgs carries a passphrase, or a vault data key exported from the
// OS keychain, to the gateway (OpUnlock).
type UnlockArgs struct {
	Passphrase []byte `json:"passphrase,omitempty"`
	DataKey    []byte `json:"data_key,omitempty"`
}

// RunPrepare asks for a run's socket (OpRunPrepare, "postern run").
type RunPrepare struct {
	Label string `json:"label,omitempty"` // at most MaxRunLabel bytes
}

// MaxRunLabel bounds a run's label, in bytes.
const MaxRunLabel = 256

// RunPrepared answers RunPrepare.
type RunPrepared struct {
	ID     string `json:"id"`
	Socket string `json:"socket"`
	// Confine is what the gateway asks a confined run to hide and to
	// show read-only, with the [run] settings (paths absolute).
	Confine RunConfinement `json:"confine"`
}

// RunConfinement lists the gateway's paths for a confined run: its state
// and socket directories to hide; its configuration, the known_hosts
// files and the askpass program to show read-only; the bastion's socket
// to keep reachable; and the [run] settings.
type RunConfinement struct {
	Hide      []string `json:"hide,omitempty"`
	ReadOnly  []string `json:"read_only,omitempty"`
	ReadWrite []string `json:"read_write,omitempty"`
	Sockets   []string `json:"sockets,omitempty"`
}

// RunStart reports the launched process (OpRunStart): for a confined run,
// the program inside the namespaces, and how it is confined (the gateway
// checks the namespaces itself).
type RunStart struct {
	ID          string        `json:"id"`
	PID         int           `json:"pid"`
	Confinement confine.Level `json:"confinement"`
}

// Card is an approval card as approvers are shown it.
type Card = approvals.CardView

// CardsArgs asks for the pending cards (OpCards); with Wait, the call
// returns when the list changes after Version (or after WaitFor). A
// Console shows the cards to a person: while it waits (and shortly
// after), the gateway counts it as an approver. Consoles follow the
// cards with OpCardsFollow; the gateway still waits for those of older
// command lines.
type CardsArgs struct {
	Wait    bool          `json:"wait,omitempty"`
	Console bool          `json:"console,omitempty"`
	Version uint64        `json:"version,omitempty"`
	WaitFor time.Duration `json:"wait_for,omitempty"`
}

// CardsResult lists the pending cards.
type CardsResult struct {
	Version uint64 `json:"version"`
	Cards   []Card `json:"cards"`
}

// CardsFollowArgs asks for the changes of the pending cards
// (OpCardsFollow). A Console shows the cards to a person: while it
// follows (and shortly after), the gateway counts it as an approver.
type CardsFollowArgs struct {
	Console bool `json:"console,omitempty"`
}

// CardsDelta is one change of the pending cards: the cards added and the
// ids of the cards gone since the step the last change brought the
// follower to, or (Reset) a snapshot of every pending card, a large one
// in parts (More). A CardBoard applies them in turn.
type CardsDelta = approvals.CardsDelta

// CardBoard is a follower's copy of the pending cards. Its Apply refuses
// (with ErrCardsGap) a change that does not follow the last one it
// applied: the follower then starts over, with a snapshot.
type CardBoard = approvals.CardBoard

// ErrCardsGap is CardBoard.Apply's error for a change that does not
// follow the last one applied.
var ErrCardsGap = approvals.ErrCardsGap

// Verdict is what an approver decides on a card.
type Verdict = approvals.Verdict

// The verdicts.
const (
	VerdictOnce    = approvals.VerdictOnce
	VerdictSession = approvals.VerdictSession
	VerdictDeny    = approvals.VerdictDeny
)

// AnswerArgs decides a card (OpAnswer).
type AnswerArgs struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`          // a Verdict's name: once, session or deny
	Subject  *int   `json:"subject,omitempty"` // a session's subject, by index on the card
}

// AnswerResult says what an answer did (OpAnswer): the verdict applied,
// once for a session answer to a card that offers no session.
type AnswerResult struct {
	Applied string `json:"applied"` // a Verdict's name
}

// SessionsResult lists runs and grants (OpSessions).
type SessionsResult struct {
	Runs   []RunState `json:"runs"`
	Grants []Grant    `json:"grants"`
}

// RunState is a live run as "postern sessions" lists it.
type RunState = approvals.RunState

// Grant is a live grant as "postern sessions" lists it.
type Grant = approvals.GrantView

// RevokeArgs names what to revoke (OpRevoke): a grant id, a run id, or
// every grant.
type RevokeArgs struct {
	Target string `json:"target,omitempty"`
	All    bool   `json:"all,omitempty"`
}

// RevokeResult says how many grants ended.
type RevokeResult struct {
	Revoked int `json:"revoked"`
}

// JournalArgs selects journal entries (OpJournalList): one entry by ID, or
// a page of at most Limit entries (at most JournalPage; 0 means a whole
// page), newest first, older than the entry Before when it is set.
type JournalArgs struct {
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Before string `json:"before,omitempty"`
}

// JournalPage is the most entries one OpJournalList answer holds, and
// JournalPageBytes about the most bytes they take (the first entry aside,
// which is always held), so that an answer stays well within a control
// line however large the journal and its entries. An answer may hold
// fewer than asked for before the journal's end: only an empty one ends
// it.
const (
	JournalPage      = 500
	JournalPageBytes = 16 << 20
)

// ResolveArgs resolves an unknown entry (OpJournalResolve): with Result,
// by hand; without, by reading the remote markers.
type ResolveArgs struct {
	ID         string `json:"id"`
	Result     string `json:"result,omitempty"`
	ExitStatus *int   `json:"exit_status,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
}

// CheckArgs describes a request to dry-run the policy for (OpCheck,
// "postern check"): the destination's names, the key (a fingerprint or a
// comment of a key the gateway holds), and the requesting chain's
// executables, requester first and, for a request through a run's own
// socket, the run last (exe rules match those two alone).
type CheckArgs struct {
	Hosts     []string   `json:"hosts,omitempty"`
	Key       string     `json:"key,omitempty"`
	Exes      []CheckExe `json:"exes,omitempty"`
	Forwarded bool       `json:"forwarded,omitempty"`
}

// CheckExe is an executable of a checked chain: its path and SHA-256.
type CheckExe struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// CheckResult answers CheckArgs: the mode and why, and the key as the
// gateway found it.
type CheckResult struct {
	approvals.CheckResult
	Key     string `json:"key"`
	KeyHeld bool   `json:"key_held"`
	// Locked says the agent is locked: it lists no key, so a key named
	// by its comment was matched by that comment alone.
	Locked bool `json:"locked,omitempty"`
	// ConfigError says why the configuration file was not put in force
	// at its last reload: the answer is the policy in force before it.
	ConfigError string `json:"config_error,omitempty"`
}
