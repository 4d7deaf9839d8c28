package approvals

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safetext"
)

// A Card asks a person to decide a request. It shows the truth first —
// what the gateway verified itself — and claims after, labelled as such.
type Card struct {
	View CardView

	req        *Request
	epoch      uint64
	subjects   []*Run // the run for run-socket requests; live ancestors otherwise
	joinKey    string // requests with the same key may wait on one session card
	joined     int    // how many requests wait on the card, less one (e.mu)
	cooldownAs string
	chain      procid.Chain // the requester's
	seq        uint64       // the step of the change sequence it was shown at (e.mu)
	done       chan struct{}
	hide       context.CancelFunc // withdraws the card from the approvers showing it
	answer     Answer
	policy     *policyChange // for a policy change card

	// expires is when the card times out (zero for a policy change),
	// with the clock's monotonic reading (cardtimeout.go); cooldown is
	// the card_cooldown a timeout starts.
	expires  time.Time
	cooldown time.Duration

	// scope and lifetime are the session scope and lifetime in force
	// when the card was shown, which its Covers line states: a grant
	// from it is no broader, whatever the policy is when it is answered.
	scope    Scope
	lifetime time.Duration
}

// ProcessView is a process as a card shows it.
type ProcessView struct {
	PID     int       `json:"pid"`
	Name    string    `json:"name"`
	Exe     string    `json:"exe"`
	SHA256  string    `json:"sha256"` // prefix of the executable's hash
	UID     uint32    `json:"uid"`
	Started time.Time `json:"started"`
}

// RunView is the subject a session approval would bind.
type RunView struct {
	ID       string `json:"id,omitempty"` // for registered runs
	Label    string `json:"label,omitempty"`
	Launched bool   `json:"launched"` // through postern run
	// Confinement says how the run is confined ("confined: namespaces,
	// Landlock ABI 7") or "unconfined".
	Confinement string `json:"confinement"`
	ProcessView
}

// KeyView is the key a card is about.
type KeyView struct {
	Fingerprint string `json:"fingerprint"`
	Comment     string `json:"comment,omitempty"`
	Type        string `json:"type,omitempty"`
	Touch       bool   `json:"touch,omitempty"`    // the security key will want a touch
	Upstream    bool   `json:"upstream,omitempty"` // held by the upstream agent, which signs
	// UpstreamSocket is the upstream agent's socket, for an upstream key.
	UpstreamSocket string `json:"upstream_socket,omitempty"`
	Application    string `json:"application,omitempty"` // a security key's, raw
	Cert           *Cert  `json:"certificate,omitempty"` // raw
}

// view is k as a card shows it, and as a grant of it is listed.
func (k Key) view() KeyView {
	return KeyView{Fingerprint: k.Fingerprint, Comment: k.Comment, Type: k.Type, Touch: k.Touch, Upstream: k.Upstream, UpstreamSocket: k.UpstreamSocket, Application: k.Application, Cert: k.Cert}
}

// DestView is the verified destination of an authentication.
type DestView struct {
	Fingerprint string   `json:"fingerprint"`
	Names       []string `json:"names"`             // from the host inventory
	Classes     []string `json:"classes,omitempty"` // from the host inventory
	// KnownHosts are the names known_hosts gives the key: what a file the
	// run can edit says, shown, never used for a decision.
	KnownHosts []string `json:"known_hosts_names,omitempty"`
	Hashed     int      `json:"hashed_entries,omitempty"` // known_hosts entries whose names are hidden
	Forwarding bool     `json:"forwarding"`
	// User is the account the client names: a claim, but for a bastion
	// request, where it is the name the bastion logs in with.
	User string `json:"user_claimed,omitempty"`
}

// CardView is what approvers are shown; "postern approve --list --json"
// prints it.
type CardView struct {
	ID string `json:"id"`
	// Kind is "" for a request's card, KindPolicyChange for a policy
	// change.
	Kind    string       `json:"kind,omitempty"`
	Reason  audit.Reason `json:"reason"`
	Changed string       `json:"what_changed,omitempty"`
	// Changes lists how a policy change loosens authority, raw.
	Changes     []string      `json:"policy_changes,omitempty"`
	Mode        audit.Mode    `json:"mode"`
	Run         RunView       `json:"run"`
	Subjects    []RunView     `json:"subjects"`
	Selected    int           `json:"selected"`
	Requester   []ProcessView `json:"requester"`
	Key         KeyView       `json:"key"`
	Purpose     Purpose       `json:"purpose"`
	Destination *DestView     `json:"destination,omitempty"`
	// Unverified says why a request that may log in somewhere has no
	// verified destination: it is UNKNOWN.
	Unverified string `json:"destination_unknown,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Message is an SSHSIG signature's message, where the agent found a
	// file whose hash is the one signed.
	Message *SignedMessage `json:"message,omitempty"`
	// Relay is the kind of session a bastion request runs (verified);
	// Command is its command line or subsystem name, raw; Terminal is
	// set when the client asked for a terminal.
	Relay     Relay  `json:"relay,omitempty"`
	Command   string `json:"command,omitempty"`
	Terminal  bool   `json:"terminal,omitempty"`
	ProbeOf   string `json:"probe_of,omitempty"` // the journal entry a probe reads
	Forwarded bool   `json:"forwarded"`          // through a forwarded agent connection
	Covers    string `json:"covers"`
	// PerCall says, for a per-call card, why this use is asked about on
	// every call: the rules of the configuration that match it (a key,
	// or a host's name or class in the host inventory), as postern check
	// says it, and what else makes it so, raw.
	PerCall []string  `json:"per_call_because,omitempty"`
	Claim   []string  `json:"claimed_command,omitempty"` // the requester's argv: a claim, cut past maxClaim bytes (claimed)
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"` // zero for a policy change, which does not time out
	// DeniedBefore is how many of the subject's cards were denied in a
	// row before this one (since its last approval); LastDenied is when
	// the last of them was.
	DeniedBefore int       `json:"denied_before,omitempty"`
	LastDenied   time.Time `json:"last_denied,omitzero"`
}

// Display names a key in the gateway's sentences (what changed, what an
// approval covers): by its fingerprint, which the gateway computed. Its
// comment is the requester's, as long as it likes: the card's question
// shows it quoted.
func (k Key) Display() string { return k.Fingerprint }

func baseName(p string) string { return filepath.Base(p) }

func itoa(n int) string { return strconv.Itoa(n) }

// cardsWere reads "card was" or "N cards were".
func cardsWere(n int) string {
	if n == 1 {
		return "card was"
	}
	return itoa(n) + " cards were"
}

func (e *Engine) processView(p *procid.Process) ProcessView {
	h := p.Exe.Hash()
	if len(h) > 12 {
		h = h[:12]
	}
	return ProcessView{PID: p.PID, Name: p.Name(), Exe: p.Exe.Path, SHA256: h, UID: p.UID, Started: p.Started(e.procs).UTC()}
}

func (e *Engine) runView(r *Run) RunView {
	return RunView{ID: r.ID, Label: r.Label, Launched: r.Launched, Confinement: r.Confinement.String(), ProcessView: e.processView(&r.Process)}
}

// OffersSession reports whether the card may be answered with a session
// approval; otherwise only "once" or "deny".
func (v *CardView) OffersSession() bool { return v.Mode == audit.ModeSession }

// Text renders a card for a terminal or an askpass dialog: the question,
// what changed, then the verified facts, then claims. It is the one
// renderer of cards for people: every string that came from the
// requester or from a file is rendered by safetext (escaped, on one line,
// cut with a marker), so no field can add a line, move the cursor or
// reorder the text around it.
func (v *CardView) Text() string {
	if v.Kind == KindPolicyChange {
		return v.policyText()
	}
	var b strings.Builder
	q := "Allow"
	switch {
	case v.Mode == audit.ModePerCall:
		q = "Allow, this one time,"
	case v.Mode == audit.ModeSession:
		q = "Allow, for this run until it exits,"
	}
	run := v.Subjects[v.Selected]
	fmt.Fprintf(&b, "%s %s (pid %d) to use key %s", q, procName(run.Name), run.PID, v.Key.Fingerprint)
	if v.Key.Comment != "" {
		// Quoted: a comment such as "yes, allow" is not part of the
		// sentence.
		fmt.Fprintf(&b, " (%s)", safetext.Quote(v.Key.Comment, safetext.Name))
	}
	switch {
	case v.Destination != nil:
		fmt.Fprintf(&b, " for %s?\n", field(destText(v.Destination)))
	case v.Unverified != "":
		b.WriteString(" for an UNKNOWN destination?\n")
	case v.Purpose == PurposeSSHSig:
		// Whole (the agent bounds it): two namespaces that differ
		// past a cut would read as one.
		fmt.Fprintf(&b, " to sign in namespace %s?\n", safetext.Quote(v.Namespace, 0))
	default:
		b.WriteString(" (destination unknown)?\n")
	}
	// Next to the question: nothing the requester makes long (its chain
	// of processes) pushes it off a screen.
	if l := v.relayLine(); l != "" {
		b.WriteString(l + "\n")
	}
	if l := v.loginLine(); l != "" {
		b.WriteString(l + "\n")
	}
	// So is why a per-call card asks: which mark makes it per-call.
	if len(v.PerCall) > 0 && v.Mode == audit.ModePerCall {
		fmt.Fprintf(&b, "Asked on every call because of: %s\n", strings.Join(firstFew(v.PerCall, safetext.Fields, safetext.Line), "; "))
	}
	// So is a remote host asking: a notification or a dialog that cuts
	// a long card still shows it.
	if v.Forwarded {
		b.WriteString("Warning: through a forwarded agent connection (a remote host is asking)\n")
	}
	if v.Changed != "" {
		// The reason is on the card's own line, below.
		fmt.Fprintf(&b, "%s\n", safetext.Field(v.Changed, safetext.Line))
	}
	if v.DeniedBefore > 0 {
		who := "process's"
		if run.ID != "" {
			who = "run's"
		}
		fmt.Fprintf(&b, "Denied before: this %s last %s denied, the last at %s.\n", who, cardsWere(v.DeniedBefore), v.LastDenied.Local().Format("15:04:05"))
	}
	fmt.Fprintf(&b, "Card %s, %s\n", v.ID, v.Reason)
	fmt.Fprintf(&b, "Run: %s (pid %d, %s, sha256 %s, started %s)", procName(run.Name), run.PID, safetext.Field(run.Exe, safetext.Path), run.SHA256, run.Started.Local().Format("15:04:05"))
	if run.Label != "" {
		fmt.Fprintf(&b, ", label %s", safetext.Quote(run.Label, safetext.Name))
	}
	b.WriteString("\n")
	if run.Confinement == "" || run.Confinement == "unconfined" {
		b.WriteString("Confinement: " + UnconfinedWarning + "\n")
	} else {
		fmt.Fprintf(&b, "Confinement: %s\n", safetext.Field(run.Confinement, safetext.Line))
	}
	fmt.Fprintf(&b, "Requested by: %s\n", chainText(v.Requester))
	b.WriteString(v.messageText())
	if d := v.Destination; d != nil {
		// The bastion verifies the host in its own key exchange; an ssh
		// client tells its agent what it verified with session-bind.
		how := "session-bind"
		if v.Relay != RelayNone {
			how = "the bastion's own connection to the host, against known_hosts"
		}
		fmt.Fprintf(&b, "Destination: host key %s, verified by %s", d.Fingerprint, how)
		if len(d.Names) > 0 {
			fmt.Fprintf(&b, "; host inventory: %s", strings.Join(safetext.Fields(d.Names, safetext.Name), ", "))
			if len(d.Classes) > 0 {
				fmt.Fprintf(&b, " (class %s)", strings.Join(safetext.Fields(d.Classes, safetext.Name), ", "))
			}
		} else {
			b.WriteString("; not in the host inventory, so asked about as strictly as any host rule could ask")
		}
		b.WriteString("\n")
		if len(d.KnownHosts) > 0 {
			fmt.Fprintf(&b, "known_hosts (a file any program of yours can edit) calls it: %s\n", strings.Join(firstFew(d.KnownHosts, safetext.Fields, safetext.Name), ", "))
		}
	}
	if v.Unverified != "" {
		fmt.Fprintf(&b, "Destination: UNKNOWN: %s; asked about as strictly as any host rule could ask\n", v.Unverified)
	}
	if c := v.Key.Cert; c != nil {
		if c.CA != "" {
			fmt.Fprintf(&b, "Certificate %s for %s, signed by CA %s\n", safetext.Quote(c.KeyID, safetext.Name), principalsText(c.Principals), c.CA)
		} else {
			fmt.Fprintf(&b, "Certificate %s for %s, NOT signed by any CA: its signature does not verify\n", safetext.Quote(c.KeyID, safetext.Name), principalsText(c.Principals))
		}
	}
	if v.Key.Application != "" {
		fmt.Fprintf(&b, "Security key made for application %s\n", safetext.Quote(v.Key.Application, safetext.Name))
	}
	wait := fmt.Sprintf("%ds", int(v.Expires.Sub(v.Created).Round(time.Second).Seconds()))
	if v.Key.Touch {
		// The touch waits as long as the card: card_timeout.
		fmt.Fprintf(&b, "Security key: once approved, it waits up to %s for a touch on the key\n", wait)
	}
	if v.Key.Upstream {
		fmt.Fprintf(&b, "Held by the upstream agent at %s: it signs once approved, after its own confirmation if it asks for one (up to %s)\n", safetext.Field(v.Key.UpstreamSocket, safetext.Path), wait)
	}
	// Whole, however long: an answer covers what this line says.
	fmt.Fprintf(&b, "Covers: %s\n", safetext.Escape(v.Covers))
	var claims []string
	if v.Destination != nil && v.Destination.User != "" && v.Relay == RelayNone {
		claims = append(claims, "user "+field(v.Destination.User))
	}
	if len(v.Claim) > 0 {
		claims = append(claims, "command "+safetext.Field(strings.Join(v.Claim, " "), safetext.Command))
	}
	if len(claims) > 0 {
		fmt.Fprintf(&b, "Claimed by the client: %s\n", strings.Join(claims, ", "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// maxListed bounds the items a card names of a list whose length a
// requester or a file it can edit chose (a certificate's principals,
// the names known_hosts gives a host key): a long list would make the
// card taller than a window, leaving it to be denied only on the
// full-screen console, and push its question off the line console's
// screen and out of a dialog.
const maxListed = 8

// firstFew renders the first maxListed items of list with render, each
// cut at limit, and counts the others.
func firstFew(list []string, render func([]string, int) []string, limit int) []string {
	out := render(list[:min(len(list), maxListed)], limit)
	if len(list) > maxListed {
		out = append(out, fmt.Sprintf("and %d more", len(list)-maxListed))
	}
	return out
}

// principalsText renders a certificate's principals, each quoted (one
// may hold a comma or a space), the first maxListed of them.
func principalsText(ps []string) string {
	if len(ps) == 0 {
		return "any principal"
	}
	return "principals " + strings.Join(firstFew(ps, safetext.Quotes, safetext.Name), ", ")
}

// field renders a name for a card (see safetext).
func field(s string) string { return safetext.Field(s, safetext.Name) }

// procName renders a process's name for a card: escaped and cut as
// field does, and quoted when it holds what joins or follows names on
// a card (safetext.Token), so that "git bash" never reads as two
// processes and "claude (pid 1)" never as a name and its pid.
func procName(s string) string { return safetext.Token(s, safetext.Name) }

// UnconfinedWarning is what every card for an unconfined run says.
const UnconfinedWarning = "unconfined: a program of this run could answer this card"

// destText names a destination in sentences (raw: a renderer escapes it).
func destText(d *DestView) string {
	if len(d.Names) > 0 {
		return d.Names[0]
	}
	return "host key " + d.Fingerprint + " (not in the host inventory)"
}

// chainShown bounds the processes a card names of a requester's chain:
// the requester and its nearest parents, and the farthest ones (the
// session's root); a chain the requester made deep is not shown whole.
const chainShown = 8

// ChainText names a requester's chain (the requester first) as a card
// does, for every other place a person reads it (postern why, the
// bastion's journal): each name escaped, quoted when it holds a space or
// a parenthesis, the chain cut in its middle when it is deep.
func ChainText(chain procid.Chain) string {
	views := make([]ProcessView, len(chain))
	for i := range chain {
		views[i] = ProcessView{PID: chain[i].PID, Name: chain[i].Name()}
	}
	return chainText(views)
}

// chainText is the requester's chain as a card shows it, from the
// requester up, each name escaped and cut, the ends with their pids.
func chainText(chain []ProcessView) string {
	names := make([]string, 0, min(len(chain), chainShown+1))
	for i, p := range chain {
		if len(chain) > chainShown && i == chainShown-3 {
			names = append(names, fmt.Sprintf("(%d more)", len(chain)-chainShown+1))
		}
		if len(chain) > chainShown && i >= chainShown-3 && i < len(chain)-2 {
			continue
		}
		n := procName(p.Name)
		if i == 0 || i == len(chain)-1 {
			n += " (" + itoa(p.PID) + ")"
		}
		names = append(names, n)
	}
	return strings.Join(names, " ← ")
}
