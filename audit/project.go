package audit

import (
	"cmp"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postern/postern/internal/safetext"
)

// Session is one session approval as the log tells it: who was approved,
// with which evidence, and when and why the approval ended.
type Session struct {
	Run         string    `json:"run"`
	Grant       string    `json:"grant,omitempty"`
	BootID      string    `json:"boot_id,omitempty"`
	VaultEpoch  uint64    `json:"vault_epoch"`
	Approved    time.Time `json:"approved"`
	ApprovedSeq uint64    `json:"approved_seq"`
	Approver    string    `json:"approver,omitempty"`
	Key         string    `json:"key,omitempty"`
	Dest        string    `json:"dest,omitempty"`
	DestNames   []string  `json:"dest_names,omitempty"`
	// Namespace is the SSHSIG namespace of an approval scoped to
	// signatures in it (session_scope = "destination").
	Namespace  string `json:"namespace,omitempty"`
	Forwarding bool   `json:"forwarding,omitempty"`
	Mode       Mode   `json:"mode,omitempty"`
	Label      string `json:"label,omitempty"`
	// Process is the identity evidence the approval was bound to (from the
	// approval, or else from the run's registration).
	Process *Process `json:"process,omitempty"`
	// Signs counts the sign events of this approval's grant.
	Signs int `json:"signs"`
	// Ended is zero while the log shows the approval still open.
	Ended     time.Time `json:"ended,omitzero"`
	EndSeq    uint64    `json:"end_seq,omitempty"`
	EndReason Reason    `json:"end_reason,omitempty"`
	// EndUnknown: the log could not be read past a point where the
	// approval was still open, so whether and when it ended is not
	// known (set by the reader that stopped).
	EndUnknown bool `json:"end_unknown,omitempty"`
	// EndInferred is true when no session_ended event was recorded and the
	// end follows from a later event: another gateway boot
	// (gateway_restarted), the gateway stopping (gateway_stopped) or the
	// vault locking (vault_locked).
	EndInferred bool `json:"end_inferred,omitempty"`
}

// Open reports whether the log shows the approval still open. Audit history
// never restores a grant: an open session here is a fact about the past.
func (s *Session) Open() bool { return s.EndReason == "" }

// Sessions projects events (in log order) into session approvals, in the
// order they were approved.
func Sessions(events []Event) []Session {
	var out []Session
	b := NewSessionBook()
	for k := range events {
		b.Add(&events[k], func(s Session) { out = append(out, s) })
	}
	b.Flush(func(s Session) { out = append(out, s) })
	slices.SortStableFunc(out, func(a, b Session) int { return cmp.Compare(a.ApprovedSeq, b.ApprovedSeq) })
	return out
}

// maxOpenSessions bounds the approvals a SessionBook keeps open: far more
// than a person approves in one gateway boot.
const maxOpenSessions = 4096

// A SessionBook projects events, read in log order one at a time, into
// session approvals, in memory that grows with the approvals open at once
// (at most maxOpenSessions: past it, in a log no gateway writes, the
// oldest is emitted as the log shows it then, open) and the runs
// registered last (bootRuns), not with the log. Each
// event costs the same however many approvals are open: they are found by
// grant and by run.
type SessionBook struct {
	open    []*Session            // in the order approved
	byGrant map[string][]*Session // open approvals with a grant id, in order
	byRun   map[string][]*Session // open approvals by run, in order
	boots   map[string]int        // open approvals per non-empty boot id
	runs    bootRuns              // the registrations of the current boot
}

// NewSessionBook returns an empty book.
func NewSessionBook() *SessionBook {
	return &SessionBook{byGrant: map[string][]*Session{}, byRun: map[string][]*Session{}, boots: map[string]int{}}
}

func (b *SessionBook) add(s *Session) {
	b.open = append(b.open, s)
	if s.Grant != "" {
		b.byGrant[s.Grant] = append(b.byGrant[s.Grant], s)
	}
	b.byRun[s.Run] = append(b.byRun[s.Run], s)
	if s.BootID != "" {
		b.boots[s.BootID]++
	}
}

// unindex removes s from the indexes (not from b.open).
func (b *SessionBook) unindex(s *Session) {
	drop := func(m map[string][]*Session, k string) {
		l := m[k]
		if i := slices.Index(l, s); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(m, k)
		} else {
			m[k] = l
		}
	}
	if s.Grant != "" {
		drop(b.byGrant, s.Grant)
	}
	drop(b.byRun, s.Run)
	if s.BootID != "" {
		if b.boots[s.BootID]--; b.boots[s.BootID] <= 0 {
			delete(b.boots, s.BootID)
		}
	}
}

// find returns the most recent open approval that e (an end or a sign) is
// about, as sessionMatches tells.
func (b *SessionBook) find(e *Event) *Session {
	l := b.byRun[e.Run]
	if e.Grant != "" {
		l = b.byGrant[e.Grant]
	}
	for j := len(l) - 1; j >= 0; j-- {
		if sessionMatches(l[j], e) {
			return l[j]
		}
	}
	return nil
}

// Add applies the next event; emit receives each approval the event ends.
func (b *SessionBook) Add(e *Event, emit func(Session)) {
	end := func(s *Session, reason Reason, inferred bool) {
		s.Ended, s.EndSeq, s.EndReason, s.EndInferred = e.Time, e.Seq, reason, inferred
		b.unindex(s)
		emit(*s)
	}
	endWhere := func(reason Reason, match func(*Session) bool) {
		b.open = slices.DeleteFunc(b.open, func(s *Session) bool {
			if match(s) {
				end(s, reason, true)
				return true
			}
			return false
		})
	}
	// A grant never outlives its gateway boot.
	if e.BootID != "" {
		if n := len(b.boots); n > 1 || n == 1 && b.boots[e.BootID] == 0 {
			endWhere(ReasonGatewayRestarted, func(s *Session) bool { return s.BootID != "" && s.BootID != e.BootID })
		}
	}
	b.runs.note(e)
	switch e.Type {
	case EventSessionApproved:
		s := &Session{
			Run: e.Run, Grant: e.Grant, BootID: e.BootID, VaultEpoch: e.VaultEpoch,
			Approved: e.Time, ApprovedSeq: e.Seq, Approver: e.Approver,
			Key: e.Key, Dest: e.Dest, DestNames: e.DestNames, Namespace: e.Detail["namespace"], Forwarding: e.Forwarding,
			Mode: e.Mode, Label: e.Label, Process: e.Process,
		}
		r := b.runs.facts(e.Run)
		if s.Process == nil {
			s.Process = r.process
		}
		if s.Label == "" {
			s.Label = r.label
		}
		b.add(s)
		if len(b.open) > maxOpenSessions {
			old := b.open[0]
			b.open = slices.Delete(b.open, 0, 1)
			b.unindex(old)
			emit(*old)
		}
	case EventSessionEnded:
		// The most recent open approval it names.
		if s := b.find(e); s != nil {
			reason := e.Reason.Canonical()
			if reason == "" {
				reason = ReasonUnspecified
			}
			i := slices.Index(b.open, s)
			b.open = slices.Delete(b.open, i, i+1)
			end(s, reason, false)
		}
	case EventSign:
		// A signature a session approval covered names its grant; one
		// without (per call, approved once, under a policy that does not
		// ask) is the run's, not the approval's.
		if e.Grant == "" {
			break
		}
		if s := b.find(e); s != nil {
			s.Signs++
		}
	case EventGatewayStopped:
		endWhere(ReasonGatewayStopped, func(s *Session) bool { return e.BootID == "" || s.BootID == "" || s.BootID == e.BootID })
	case EventVaultLocked:
		endWhere(ReasonVaultLocked, func(s *Session) bool { return e.BootID == "" || s.BootID == "" || s.BootID == e.BootID })
	}
}

// Flush emits the approvals still open at the end of the log, in the order
// they were approved.
func (b *SessionBook) Flush(emit func(Session)) {
	for _, s := range b.open {
		emit(*s)
	}
	b.open = nil
	clear(b.byGrant)
	clear(b.byRun)
	clear(b.boots)
}

// sessionMatches tells whether e (an end or a sign) is about approval s: by
// grant when e names one, else by run within the same boot.
func sessionMatches(s *Session, e *Event) bool {
	if e.Grant != "" {
		return s.Grant == e.Grant
	}
	if e.Run == "" || s.Run != e.Run {
		return false
	}
	return e.BootID == "" || s.BootID == "" || s.BootID == e.BootID
}

// Line is one event of the activity timeline.
type Line struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Type   EventType `json:"type"`
	Fields []Field   `json:"fields,omitempty"`
	// Text renders the line for people, its time in local time, e.g.
	// "2026-12-01 14:23:06 action_denied run=R31 key=SHA256:k reason=gateway_restarted".
	Text string `json:"text"`
}

// Field is one key=value of a Line.
type Field struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// String returns l.Text.
func (l Line) String() string { return l.Text }

// Activity projects events (in log order) into a timeline, keeping those at
// or after since (a zero since keeps all). Times are shown in local time,
// as --since reads them. An event without process facts shows those of its
// run's registration.
func Activity(events []Event, since time.Time) []Line {
	var out []Line
	tl := NewTimeline(since, "")
	for k := range events {
		if l, ok := tl.Add(&events[k]); ok {
			out = append(out, l)
		}
	}
	return out
}

// A Timeline renders events, read in log order one at a time, as lines,
// in memory that does not grow with the log (bootRuns).
type Timeline struct {
	since time.Time
	run   string
	runs  bootRuns // the registrations of the current boot
}

// NewTimeline returns a timeline of the events at or after since (zero:
// all) that name run (empty: every event).
func NewTimeline(since time.Time, run string) *Timeline {
	return &Timeline{since: since, run: run}
}

// Keeps takes the next event as Add does, without rendering it, and
// reports whether the timeline keeps it.
func (tl *Timeline) Keeps(e *Event) bool {
	tl.runs.note(e)
	if !tl.since.IsZero() && e.Time.Before(tl.since) {
		return false
	}
	return tl.run == "" || e.Run == tl.run
}

// Add renders the next event; ok is false for an event the timeline skips.
func (tl *Timeline) Add(e *Event) (l Line, ok bool) {
	if !tl.Keeps(e) {
		return Line{}, false
	}
	p := e.Process
	if p == nil {
		p = tl.runs.facts(e.Run).process
	}
	l = Line{Seq: e.Seq, Time: e.Time, Type: e.Type, Fields: lineFields(e, p)}
	var b strings.Builder
	b.Grow(160)
	// Local time: the zone --since reads its times in, and the one every
	// other time the command line prints is in.
	b.WriteString(e.Time.Local().Format(time.DateTime))
	b.WriteByte(' ')
	b.WriteString(quoteValue(string(e.Type)))
	for _, f := range l.Fields {
		b.WriteByte(' ')
		b.WriteString(quoteValue(f.Key))
		b.WriteByte('=')
		b.WriteString(quoteValue(f.Value))
	}
	l.Text = b.String()
	return l, true
}

func lineFields(e *Event, proc *Process) []Field {
	fs := make([]Field, 0, 6+len(e.Detail))
	var used []string // detail keys shown above
	add := func(k, v string) {
		if v != "" {
			fs = append(fs, Field{k, v})
		}
	}
	forwarding := func() {
		if e.Forwarding {
			add("forwarding", "yes")
		}
	}
	exe, signer, pid := "", "", ""
	if p := proc; p != nil {
		if p.Exe != "" {
			exe = path.Base(p.Exe)
		}
		signer = p.Signer
		if p.PID != 0 {
			pid = strconv.Itoa(p.PID)
		}
	}
	vault := strconv.FormatUint(e.VaultEpoch, 10)
	dest := e.Dest
	if len(e.DestNames) > 0 {
		dest = e.DestNames[0]
	}
	switch e.Type {
	case EventGatewayStarted:
		add("boot", e.BootID)
		add("previous_boot", e.PrevBootID)
	case EventGatewayRestarted:
		add("previous_boot", e.PrevBootID)
		add("current_boot", e.BootID)
	case EventGatewayStopped:
		add("boot", e.BootID)
	case EventVaultLocked, EventVaultUnlocked:
		add("vault", vault)
	case EventRunRegistered:
		add("run", e.Run)
		add("exe", exe)
		add("pid", pid)
		add("label", e.Label)
	case EventCardShown:
		add("card", e.Card)
		add("run", e.Run)
		add("key", e.Key)
		add("dest", dest)
		add("mode", string(e.Mode))
		forwarding()
	case EventSessionApproved:
		// The host of an approval scoped to one (session_scope =
		// "destination"); the namespace of one scoped to signatures is
		// in the detail.
		add("run", e.Run)
		add("grant", e.Grant)
		add("key", e.Key)
		add("dest", dest)
		add("exe", exe)
		add("signer", signer)
		add("boot", e.BootID)
		add("vault", vault)
	case EventSessionEnded:
		add("run", e.Run)
		add("grant", e.Grant)
		add("reason", string(e.Reason))
	case EventActionDenied:
		add("run", e.Run)
		add("key", e.Key)
		add("reason", string(e.Reason))
		add("dest", dest)
		forwarding()
	case EventSign:
		// The card a person approved it on, for a signature asked about
		// on its own (per call): several may be up at once.
		add("run", e.Run)
		add("grant", e.Grant)
		add("card", e.Card)
		add("key", e.Key)
		add("dest", dest)
		add("mode", string(e.Mode))
		forwarding()
	case EventVaultKeyAdded, EventVaultCertificateAdded, EventVaultKeyRemoved, EventVaultPassphraseChanged, EventVaultChangeNotWritten:
		add("key", e.Key)
		add("by", e.Approver)
	case EventAgentKeyAdded, EventAgentKeyRemoved:
		add("key", e.Key)
		add("run", e.Run)
		add("reason", string(e.Reason))
		forwarding()
		add("by", e.Approver)
	case EventPolicyChangePending, EventPolicyChangeApproved, EventPolicyChangeDenied, EventPolicyChangeWithdrawn:
		add("card", e.Card)
		add("reason", string(e.Reason))
		add("by", e.Approver)
	case EventHostAdded, EventHostRemoved:
		add("by", e.Approver)
	case EventCheckpoint:
		add("epoch", e.Detail["epoch"])
		used = []string{"epoch", "max_unsealed"}
	default:
		add("run", e.Run)
		add("grant", e.Grant)
		add("reason", string(e.Reason))
	}
	keys := make([]string, 0, len(e.Detail))
	for k := range e.Detail {
		if !slices.Contains(used, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, e.Detail[k])
	}
	return fs
}

// quoteValue quotes values, and event types and detail keys (plain words
// from the writer, but an entry after the last checkpoint may be
// anyone's), that would not read as one word: empty, or
// holding a space, a tab, a quote, an equals sign, a backslash or a
// character that does not print. A value holding a character that shows
// nothing though it counts as printable (safetext.Invisible) is quoted
// with every character outside ASCII escaped.
func quoteValue(v string) string {
	if v == "" {
		return strconv.Quote(v)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= utf8.RuneSelf:
			quote := false
			for _, r := range v[i:] {
				if safetext.Invisible(r) {
					return strconv.QuoteToASCII(v)
				}
				quote = quote || r == '=' || r == '"' || r == '\\' || r == ' ' || r == '\t' || !strconv.IsPrint(r)
			}
			if quote {
				return strconv.Quote(v)
			}
			return v
		case c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f:
			return strconv.Quote(v)
		}
	}
	return v
}
