package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kinds of session request an entry records.
const (
	KindExec      = "exec"      // Command is the command line
	KindShell     = "shell"     // Command is empty
	KindSubsystem = "subsystem" // Command is the subsystem name, such as "sftp"
)

// End outcomes. Rejected, denied and failed_to_start mean the request
// never reached a running program: they are the only outcomes that make an
// entry RETRY_SAFE.
const (
	OutcomeExited         = "exited"           // exit-status ExitStatus
	OutcomeSignaled       = "signaled"         // exit-signal Signal (CoreDumped, ErrorMsg)
	OutcomeClosedNoStatus = "closed_no_status" // the upstream closed the channel without a status: written by earlier versions only, now ReasonNoStatus; unknown (Lost)
	OutcomeRejected       = "rejected"         // the upstream answered the request with failure
	OutcomeDenied         = "denied"           // policy or approval said no; nothing was sent
	OutcomeFailedToStart  = "failed_to_start"  // dial, authentication or channel open failed; nothing was sent
)

// Unknown reasons.
const (
	ReasonUpstreamLost        = "upstream_lost"        // the upstream connection died while the command ran
	ReasonBastionRestarted    = "bastion_restarted"    // found at Open: an earlier instance recorded no outcome
	ReasonDispatchUnconfirmed = "dispatch_unconfirmed" // the request was sent but its reply never came
	ReasonBastionStopped      = "bastion_stopped"      // the gateway stopped, after a grace period, while the command ran
	ReasonNoStatus            = "no_status"            // the upstream closed the channel without an exit status or signal
	// ReasonBastionNotRunning is never stored: OpenReadOnly shows entries
	// that have no outcome this way, because no bastion holds the journal
	// while a reader has it open. The next Open records bastion_restarted.
	ReasonBastionNotRunning = "bastion_not_running"
)

// Phases an unknown entry had reached.
const (
	PhaseIntent     = "intent"     // started, the upstream had not accepted the request
	PhaseDispatched = "dispatched" // the upstream had accepted the request
)

// Who resolved an entry.
const (
	ByUser  = "user"  // a person, with what they checked as evidence
	ByProbe = "probe" // marker.ParseProbe's reading of the remote markers
)

// Resolution results.
const (
	ResultRan          = "ran"           // the command ran to an end (ExitStatus when known)
	ResultStillRunning = "still_running" // the command is still running on the host
	ResultNotStarted   = "not_started"   // the command never started and never will
	ResultInconclusive = "inconclusive"  // the evidence does not tell
)

// Bounds on what an entry holds. Longer descriptive text is cut (with
// "…"); a longer command is refused, since a command that cannot be
// journaled must not run.
const (
	MaxCommand     = 256 << 10 // OpenSSH's largest packet
	MaxOutputTail  = 4 << 10   // End.OutputTail keeps the last bytes
	MaxText        = 4 << 10   // Requester, Approval, ErrorMsg, Detail, …
	MaxEvidence    = 16 << 10  // Resolution.Evidence
	MaxResolutions = 32
)

// Target is the verified destination of a command.
type Target struct {
	User    string `json:"user"`
	Host    string `json:"host"`
	Port    int    `json:"port"`
	HostKey string `json:"host_key,omitempty"` // "SHA256:…" fingerprint the bastion verified
}

// LoginUser returns the account sshd logs user in as: user up to its
// first colon. OpenSSH's sshd takes what follows a colon as a login style
// (a BSD authentication method) and logs "deploy:skey" in as "deploy".
func LoginUser(user string) string {
	u, _, _ := strings.Cut(user, ":")
	return u
}

// String returns user@host:port (with brackets around an IPv6 host).
func (t Target) String() string {
	return t.User + "@" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

// Entry is everything the journal knows about one remote command: what
// was asked, by whom, where, how it was approved, and what became of it.
// Fields are set by Start and then only by the journal's changes
// (Dispatched, End, MarkUnknown, Resolve).
type Entry struct {
	ID           string `json:"id"`                      // NewID form; Start assigns it when empty
	Instance     string `json:"instance"`                // bastion instance that started the command
	BootID       string `json:"boot_id,omitempty"`       // gateway boot id
	Run          string `json:"run,omitempty"`           // run id, when the requester belongs to one
	Conn         string `json:"conn,omitempty"`          // bastion connection id
	Requester    string `json:"requester,omitempty"`     // "ssh (4121) ← bash ← claude (3988)"
	RequesterPID int    `json:"requester_pid,omitempty"` // pid of the requesting ssh

	Target        Target `json:"target"`
	Kind          string `json:"kind"`           // exec, shell or subsystem
	Command       []byte `json:"command"`        // exact bytes (base64 in JSON)
	CommandSHA256 string `json:"command_sha256"` // hex SHA-256 of Command
	PTY           bool   `json:"pty,omitempty"`

	Approval  string `json:"approval,omitempty"`   // grant or card id, and why it allowed this
	Marker    bool   `json:"marker,omitempty"`     // the command ran inside marker.Wrap: a probe can tell what happened
	RetryOf   string `json:"retry_of,omitempty"`   // the unknown entry a person approved retrying
	RetriedBy string `json:"retried_by,omitempty"` // set on an unknown entry when an approved retry starts

	Started    time.Time `json:"started"`             // committed before the request went upstream
	Dispatched time.Time `json:"dispatched,omitzero"` // the upstream accepted the request

	End         *End         `json:"end,omitempty"`
	Unknown     *Unknown     `json:"unknown,omitempty"`
	Resolutions []Resolution `json:"resolutions,omitempty"` // oldest first; the last one counts
}

// End is an observed outcome.
type End struct {
	At         time.Time `json:"at"`
	Outcome    string    `json:"outcome"`
	ExitStatus int       `json:"exit_status"`
	Signal     string    `json:"signal,omitempty"` // "TERM", as SSH names it
	CoreDumped bool      `json:"core_dumped,omitempty"`
	ErrorMsg   string    `json:"error,omitempty"`
	BytesIn    int64     `json:"bytes_in"`  // client to host
	BytesOut   int64     `json:"bytes_out"` // host stdout to client
	BytesErr   int64     `json:"bytes_err"` // host stderr to client
	OutputTail []byte    `json:"output_tail,omitempty"`
	ClientGone bool      `json:"client_gone,omitempty"` // the client left before the end; the bastion drained the rest
}

// Unknown says that no outcome could be observed.
type Unknown struct {
	At        time.Time `json:"at"`
	Reason    string    `json:"reason"`
	Detail    string    `json:"detail,omitempty"`
	LastPhase string    `json:"last_phase"` // intent or dispatched, set by the journal
}

// Resolution is what a person or a probe found out about an unknown
// entry, with the evidence.
type Resolution struct {
	At         time.Time `json:"at"`
	By         string    `json:"by"`
	Result     string    `json:"result"`
	ExitStatus *int      `json:"exit_status,omitempty"` // with ran, when known
	Evidence   string    `json:"evidence,omitempty"`
}

// Clone returns a deep copy.
func (e *Entry) Clone() *Entry {
	if e == nil {
		return nil
	}
	c := *e
	c.Command = cloneBytes(e.Command)
	if e.End != nil {
		end := *e.End
		end.OutputTail = cloneBytes(e.End.OutputTail)
		c.End = &end
	}
	if e.Unknown != nil {
		u := *e.Unknown
		c.Unknown = &u
	}
	if e.Resolutions != nil {
		c.Resolutions = make([]Resolution, len(e.Resolutions))
		for i, r := range e.Resolutions {
			if r.ExitStatus != nil {
				s := *r.ExitStatus
				r.ExitStatus = &s
			}
			c.Resolutions[i] = r
		}
	}
	return &c
}

// CommandText returns the command for display: the text itself when it is
// valid UTF-8 without control characters other than tab and newline, and a
// Go-quoted string otherwise.
func (e *Entry) CommandText() string {
	s := string(e.Command)
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f
	}) {
		return s
	}
	return strconv.Quote(s)
}

// Describe returns a one-line summary of what is known, for people:
// "exited 0", "signaled TERM", "unknown (upstream_lost, dispatched)",
// "ran (exit 3) per probe".
func (e *Entry) Describe() string {
	switch {
	case e.End != nil && (!e.Lost() || len(e.Resolutions) == 0):
		switch e.End.Outcome {
		case OutcomeExited:
			return "exited " + strconv.Itoa(e.End.ExitStatus)
		case OutcomeSignaled:
			return "signaled " + e.End.Signal
		}
		return e.End.Outcome
	case e.Lost():
		if n := len(e.Resolutions); n > 0 {
			r := e.Resolutions[n-1]
			s := r.Result
			if r.ExitStatus != nil {
				s += " (exit " + strconv.Itoa(*r.ExitStatus) + ")"
			}
			return s + " per " + r.By
		}
		return "unknown (" + e.Unknown.Reason + ", " + e.Unknown.LastPhase + ")"
	case !e.Dispatched.IsZero():
		return "running"
	}
	return "starting"
}

// CommandHash returns the hex SHA-256 of a command, the form of
// Entry.CommandSHA256.
func CommandHash(command []byte) string {
	sum := sha256.Sum256(command)
	return hex.EncodeToString(sum[:])
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// tail keeps the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}

// validate checks the invariants every stored entry keeps. DecodeEntry
// applies it to records read back, so a damaged or forged record is
// refused rather than shown or acted on.
func (e *Entry) validate() error {
	switch {
	case !ValidID(e.ID):
		return fmt.Errorf("id %q is not a journal id", e.ID)
	case e.Instance == "" || len(e.Instance) > 64:
		return fmt.Errorf("entry %s: instance must be 1 to 64 bytes", e.ID)
	case e.Kind != KindExec && e.Kind != KindShell && e.Kind != KindSubsystem:
		return fmt.Errorf("entry %s: kind %q is not exec, shell or subsystem", e.ID, e.Kind)
	case len(e.Command) > MaxCommand:
		return fmt.Errorf("entry %s: command is %d bytes, more than %d", e.ID, len(e.Command), MaxCommand)
	case e.CommandSHA256 != CommandHash(e.Command):
		return fmt.Errorf("entry %s: command_sha256 does not match the command", e.ID)
	case e.Target.Host == "" || e.Target.Port < 0 || e.Target.Port > 65535:
		return fmt.Errorf("entry %s: target %q has no host or a bad port", e.ID, e.Target)
	case e.Started.IsZero():
		return fmt.Errorf("entry %s: no start time", e.ID)
	case e.RequesterPID < 0:
		return fmt.Errorf("entry %s: negative requester pid", e.ID)
	case e.RetryOf != "" && !ValidID(e.RetryOf), e.RetriedBy != "" && !ValidID(e.RetriedBy):
		return fmt.Errorf("entry %s: retry_of or retried_by is not a journal id", e.ID)
	case e.End != nil && e.Unknown != nil:
		return fmt.Errorf("entry %s: both an end and an unknown outcome", e.ID)
	case len(e.Resolutions) > 0 && !e.Lost():
		return fmt.Errorf("entry %s: resolutions without an unknown outcome", e.ID)
	case len(e.Resolutions) > MaxResolutions:
		return fmt.Errorf("entry %s: more than %d resolutions", e.ID, MaxResolutions)
	}
	for _, s := range []string{e.BootID, e.Run, e.Conn, e.Requester, e.Approval, e.Target.User, e.Target.Host, e.Target.HostKey} {
		if len(s) > MaxText {
			return fmt.Errorf("entry %s: a text field is longer than %d bytes", e.ID, MaxText)
		}
	}
	if e.End != nil {
		if err := e.End.validate(e); err != nil {
			return fmt.Errorf("entry %s: %v", e.ID, err)
		}
	}
	if e.Unknown != nil {
		if err := e.Unknown.validate(); err != nil {
			return fmt.Errorf("entry %s: %v", e.ID, err)
		}
	}
	for _, r := range e.Resolutions {
		if err := r.validate(); err != nil {
			return fmt.Errorf("entry %s: %v", e.ID, err)
		}
	}
	return nil
}

func (end *End) validate(e *Entry) error {
	if end.At.IsZero() {
		return fmt.Errorf("end has no time")
	}
	switch end.Outcome {
	case OutcomeExited:
		if end.ExitStatus < 0 {
			return fmt.Errorf("negative exit status %d", end.ExitStatus)
		}
	case OutcomeSignaled:
		if end.Signal == "" {
			return fmt.Errorf("outcome signaled without a signal name")
		}
	case OutcomeClosedNoStatus:
	case OutcomeRejected, OutcomeDenied, OutcomeFailedToStart:
		if !e.Dispatched.IsZero() {
			return fmt.Errorf("outcome %s for a request the upstream had accepted", end.Outcome)
		}
	default:
		return fmt.Errorf("unknown outcome %q", end.Outcome)
	}
	switch {
	case len(end.Signal) > 64, len(end.ErrorMsg) > MaxText:
		return fmt.Errorf("end text too long")
	case len(end.OutputTail) > MaxOutputTail:
		return fmt.Errorf("output tail longer than %d bytes", MaxOutputTail)
	case end.BytesIn < 0 || end.BytesOut < 0 || end.BytesErr < 0:
		return fmt.Errorf("negative byte count")
	}
	return nil
}

func (u *Unknown) validate() error {
	switch {
	case u.At.IsZero():
		return fmt.Errorf("unknown outcome has no time")
	case u.Reason != ReasonUpstreamLost && u.Reason != ReasonBastionRestarted && u.Reason != ReasonDispatchUnconfirmed && u.Reason != ReasonBastionStopped && u.Reason != ReasonNoStatus:
		return fmt.Errorf("unknown reason %q", u.Reason)
	case u.LastPhase != PhaseIntent && u.LastPhase != PhaseDispatched:
		return fmt.Errorf("unknown last phase %q", u.LastPhase)
	case len(u.Detail) > MaxText:
		return fmt.Errorf("unknown detail too long")
	}
	return nil
}

func (r *Resolution) validate() error {
	switch {
	case r.At.IsZero():
		return fmt.Errorf("resolution has no time")
	case r.By != ByUser && r.By != ByProbe:
		return fmt.Errorf("resolution by %q: want user or probe", r.By)
	case r.Result != ResultRan && r.Result != ResultStillRunning && r.Result != ResultNotStarted && r.Result != ResultInconclusive:
		return fmt.Errorf("resolution result %q: want ran, still_running, not_started or inconclusive", r.Result)
	case r.ExitStatus != nil && r.Result != ResultRan:
		return fmt.Errorf("an exit status goes only with result ran")
	case r.ExitStatus != nil && *r.ExitStatus < 0:
		return fmt.Errorf("negative exit status")
	case len(r.Evidence) > MaxEvidence:
		return fmt.Errorf("evidence longer than %d bytes", MaxEvidence)
	}
	return nil
}
