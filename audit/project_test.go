package audit

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func at(hms string) time.Time {
	t, err := time.Parse(time.TimeOnly, hms)
	if err != nil {
		panic(err)
	}
	return time.Date(2026, 7, 22, t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// seedEvents is the seed's example sequence, with the run registrations and
// signs around it.
func seedEvents() []Event {
	claude := &Process{PID: 48192, Exe: "/usr/local/bin/claude", ExeSHA256: "9f2c1a", UID: 1000, PPID: 48001}
	evs := []Event{
		{Type: EventGatewayStarted, Time: at("14:18:00"), BootID: "B8", VaultEpoch: 17},
		{Type: EventRunRegistered, Time: at("14:18:03"), BootID: "B8", VaultEpoch: 17, Run: "R31", Label: "cleanup", Process: claude},
		{Type: EventSessionApproved, Time: at("14:20:11"), BootID: "B8", VaultEpoch: 17, Run: "R31", Grant: "G1", Key: "SHA256:k", Mode: ModeSession, Approver: "tty"},
		{Type: EventSign, Time: at("14:20:12"), BootID: "B8", VaultEpoch: 17, Run: "R31", Grant: "G1", Key: "SHA256:k", DestNames: []string{"prod-db-1"}, Mode: ModeSession},
		{Type: EventGatewayRestarted, Time: at("14:23:04"), BootID: "C2", PrevBootID: "B8", VaultEpoch: 17},
		{Type: EventActionDenied, Time: at("14:23:06"), BootID: "C2", VaultEpoch: 17, Run: "R31", Reason: ReasonGatewayRestarted},
		{Type: EventRunRegistered, Time: at("14:23:08"), BootID: "C2", VaultEpoch: 17, Run: "R32", Process: claude},
		{Type: EventSessionApproved, Time: at("14:23:09"), BootID: "C2", VaultEpoch: 17, Run: "R32", Grant: "G2", Key: "SHA256:k", Mode: ModeSession},
		{Type: EventSign, Time: at("14:23:12"), BootID: "C2", VaultEpoch: 17, Run: "R32", Grant: "G2", Key: "SHA256:k", DestNames: []string{"prod-db-1"}, Mode: ModeSession},
		{Type: EventSign, Time: at("14:23:13"), BootID: "C2", VaultEpoch: 17, Run: "R32", Key: "SHA256:k", Mode: ModePerCall},
		{Type: EventSessionEnded, Time: at("14:30:00"), BootID: "C2", VaultEpoch: 17, Run: "R32", Grant: "G2", Reason: ReasonProcessExited},
		{Type: EventSessionApproved, Time: at("14:31:00"), BootID: "C2", VaultEpoch: 17, Run: "R33", Grant: "G3",
			Process: &Process{PID: 5000, Exe: "/usr/bin/code", Signer: "Example Developer ID"}},
		{Type: EventVaultLocked, Time: at("14:40:00"), BootID: "C2", VaultEpoch: 18},
		{Type: EventVaultUnlocked, Time: at("14:45:00"), BootID: "C2", VaultEpoch: 19},
		{Type: EventSessionApproved, Time: at("14:46:00"), BootID: "C2", VaultEpoch: 19, Run: "R34", Grant: "G4"},
		{Type: EventGatewayStopped, Time: at("15:00:00"), BootID: "C2", VaultEpoch: 19},
		{Type: EventGatewayStarted, Time: at("15:01:00"), BootID: "D5", PrevBootID: "C2", VaultEpoch: 19},
		{Type: EventSessionApproved, Time: at("15:02:00"), BootID: "D5", VaultEpoch: 19, Run: "R35", Grant: "G5"},
		{Type: EventSessionEnded, Time: at("15:03:00"), BootID: "D5", Run: "R35", Grant: "G5", Reason: ReasonRevoked},
		{Type: EventSessionApproved, Time: at("15:04:00"), BootID: "D5", VaultEpoch: 19, Run: "R36", Grant: "G6"},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 2)
	}
	return evs
}

func TestSessions(t *testing.T) {
	ss := Sessions(seedEvents())
	if len(ss) != 6 {
		t.Fatalf("%d sessions: %+v", len(ss), ss)
	}
	want := []struct {
		run      string
		reason   Reason
		inferred bool
		signs    int
		ended    string
	}{
		{"R31", ReasonGatewayRestarted, true, 1, "14:23:04"},
		{"R32", ReasonProcessExited, false, 1, "14:30:00"},
		{"R33", ReasonVaultLocked, true, 0, "14:40:00"},
		{"R34", ReasonGatewayStopped, true, 0, "15:00:00"},
		{"R35", ReasonRevoked, false, 0, "15:03:00"},
		{"R36", "", false, 0, ""},
	}
	for i, w := range want {
		s := ss[i]
		ended := ""
		if !s.Ended.IsZero() {
			ended = s.Ended.Format(time.TimeOnly)
		}
		if s.Run != w.run || s.EndReason != w.reason || s.EndInferred != w.inferred || s.Signs != w.signs || ended != w.ended {
			t.Errorf("session %d: got %s reason=%q inferred=%v signs=%d ended=%q; want %+v", i, s.Run, s.EndReason, s.EndInferred, s.Signs, ended, w)
		}
	}
	// Evidence comes from the run's registration when the approval has none.
	if p := ss[0].Process; p == nil || p.PID != 48192 || ss[0].Label != "cleanup" {
		t.Errorf("evidence: %+v label=%q", p, ss[0].Label)
	}
	if ss[0].EndSeq != 6 || ss[0].BootID != "B8" || ss[0].VaultEpoch != 17 {
		t.Errorf("R31: %+v", ss[0])
	}
	if !ss[5].Open() || ss[4].Open() {
		t.Errorf("open flags wrong")
	}
	if _, err := json.Marshal(ss); err != nil {
		t.Fatal(err)
	}
	if Sessions(nil) != nil {
		t.Error("no events, sessions")
	}
}

func TestActivity(t *testing.T) {
	lines := Activity(seedEvents(), time.Time{})
	var text []string
	for _, l := range lines {
		text = append(text, l.String())
	}
	got := strings.Join(text, "\n")
	for _, want := range []string{
		"2026-07-22 14:20:11 session_approved run=R31 grant=G1 key=SHA256:k exe=claude boot=B8 vault=17",
		"2026-07-22 14:23:04 gateway_restarted previous_boot=B8 current_boot=C2",
		"2026-07-22 14:23:06 action_denied run=R31 reason=gateway_restarted",
		"2026-07-22 14:23:09 session_approved run=R32 grant=G2 key=SHA256:k exe=claude boot=C2 vault=17",
		"2026-07-22 14:23:12 sign run=R32 grant=G2 key=SHA256:k dest=prod-db-1 mode=session",
		`2026-07-22 14:31:00 session_approved run=R33 grant=G3 exe=code signer="Example Developer ID" boot=C2 vault=17`,
		"2026-07-22 14:30:00 session_ended run=R32 grant=G2 reason=process_exited",
		"2026-07-22 14:40:00 vault_locked vault=18",
		"2026-07-22 15:01:00 gateway_started boot=D5 previous_boot=C2",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing line %q in\n%s", want, got)
		}
	}
	// Order is log order: the seed's sequence appears in this order.
	seq := []string{"session_approved run=R31", "gateway_restarted", "action_denied run=R31", "session_approved run=R32", "sign run=R32"}
	pos := -1
	for _, s := range seq {
		i := strings.Index(got, s)
		if i <= pos {
			t.Fatalf("%q out of order", s)
		}
		pos = i
	}
	since := Activity(seedEvents(), at("15:00:00"))
	if len(since) != 5 || since[0].Type != EventGatewayStopped || since[0].Seq != 17 {
		t.Fatalf("since: %+v", since)
	}
	js, _ := json.Marshal(lines[2])
	if !strings.Contains(string(js), `"text":"2026-07-22 14:20:11 session_approved run=R31 grant=G1 key=SHA256:k exe=claude boot=B8 vault=17"`) ||
		!strings.Contains(string(js), `{"key":"run","value":"R31"}`) {
		t.Fatalf("json: %s", js)
	}
}

func TestActivityDetailAndQuoting(t *testing.T) {
	evs := []Event{
		{Type: "command_ended", Time: at("10:00:00"), Run: "R1", Detail: map[string]string{"outcome": "unknown", "cmd": "systemctl restart db", "exit": ""}},
		{Type: EventCheckpoint, Time: at("10:00:01"), Detail: map[string]string{"epoch": "4", "max_unsealed": "256"}},
		{Type: EventLogRecovered, Time: at("10:00:02"), Detail: map[string]string{"offset": "100", "bytes": "7"}},
		{Type: EventAgentKeyAdded, Time: at("10:00:03"), Key: "SHA256:k", Run: "R2", Approver: "pid=9 exe=/usr/bin/ssh-add",
			Detail: map[string]string{"comment": "deploy \x1b[2J", "confirm": "yes"}},
		{Type: EventAgentKeyRemoved, Time: at("10:00:04"), Key: "SHA256:k", Reason: ReasonExpired},
		// A comment that would read as "deploy": a Hangul filler after it.
		{Type: EventAgentKeyAdded, Time: at("10:00:05"), Key: "SHA256:k", Detail: map[string]string{"comment": "deploy\u3164"}},
	}
	lines := Activity(evs, time.Time{})
	want := []string{
		`2026-07-22 10:00:00 command_ended run=R1 cmd="systemctl restart db" outcome=unknown`,
		`2026-07-22 10:00:01 checkpoint epoch=4`,
		`2026-07-22 10:00:02 log_recovered bytes=7 offset=100`,
		`2026-07-22 10:00:03 agent_key_added key=SHA256:k run=R2 by="pid=9 exe=/usr/bin/ssh-add" comment="deploy \x1b[2J" confirm=yes`,
		`2026-07-22 10:00:04 agent_key_removed key=SHA256:k reason=expired`,
		`2026-07-22 10:00:05 agent_key_added key=SHA256:k comment="deploy\u3164"`,
	}
	for i, w := range want {
		if lines[i].Text != w {
			t.Errorf("line %d: %q, want %q", i, lines[i].Text, w)
		}
	}
}

// TestProjectionsFromARealLog runs the seed's sequence through a log and
// back.
func TestProjectionsFromARealLog(t *testing.T) {
	tl := newTestSetup(t)
	l := tl.open(t)
	for _, e := range seedEvents() {
		mustAppend(t, l, e)
	}
	l.Close()
	evs, err := ReadEvents(tl.path, tl.setup.Identity)
	if err != nil {
		t.Fatal(err)
	}
	var entries []Event
	for _, e := range evs {
		if e.Type != EventCheckpoint {
			entries = append(entries, e)
		}
	}
	want := Activity(seedEvents(), time.Time{})
	got := Activity(entries, time.Time{})
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Text != want[i].Text {
			t.Errorf("line %d: %q, want %q", i, got[i].Text, want[i].Text)
		}
	}
	if ss := Sessions(evs); len(ss) != 6 || ss[0].EndReason != ReasonGatewayRestarted {
		t.Fatalf("sessions from the log: %+v", ss)
	}
}

// scanBook is the session book as a plain scan over the open approvals:
// the model SessionBook's indexes must agree with.
type scanBook struct{ open []*Session }

func (b *scanBook) add(e *Event, emit func(Session)) {
	end := func(s *Session, reason Reason, inferred bool) {
		s.Ended, s.EndSeq, s.EndReason, s.EndInferred = e.Time, e.Seq, reason, inferred
		emit(*s)
	}
	endWhere := func(reason Reason, match func(*Session) bool) {
		var kept []*Session
		for _, s := range b.open {
			if match(s) {
				end(s, reason, true)
			} else {
				kept = append(kept, s)
			}
		}
		b.open = kept
	}
	if e.BootID != "" {
		endWhere(ReasonGatewayRestarted, func(s *Session) bool { return s.BootID != "" && s.BootID != e.BootID })
	}
	latest := func() int {
		for j := len(b.open) - 1; j >= 0; j-- {
			if sessionMatches(b.open[j], e) {
				return j
			}
		}
		return -1
	}
	switch e.Type {
	case EventSessionApproved:
		b.open = append(b.open, &Session{Run: e.Run, Grant: e.Grant, BootID: e.BootID, Approved: e.Time, ApprovedSeq: e.Seq})
	case EventSessionEnded:
		if j := latest(); j >= 0 {
			s := b.open[j]
			b.open = append(b.open[:j:j], b.open[j+1:]...)
			end(s, e.Reason, false)
		}
	case EventSign:
		if j := latest(); j >= 0 && e.Grant != "" {
			b.open[j].Signs++
		}
	case EventGatewayStopped, EventVaultLocked:
		reason := ReasonGatewayStopped
		if e.Type == EventVaultLocked {
			reason = ReasonVaultLocked
		}
		endWhere(reason, func(s *Session) bool { return e.BootID == "" || s.BootID == "" || s.BootID == e.BootID })
	}
}

// TestSessionBookAgreesWithScan feeds random event streams, with approvals
// that share runs, grants and boots, to SessionBook and to a plain scan,
// and compares every approval they emit.
func TestSessionBookAgreesWithScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	pick := func(words ...string) string { return words[rng.IntN(len(words))] }
	types := []EventType{EventSessionApproved, EventSessionApproved, EventSessionEnded, EventSign, EventSign, EventSign, EventGatewayStopped, EventVaultLocked}
	for round := 0; round < 200; round++ {
		book, model := NewSessionBook(), &scanBook{}
		var got, want []Session
		for i := 0; i < 300; i++ {
			e := Event{Seq: uint64(i), Type: types[rng.IntN(len(types))], Time: time.Unix(int64(i), 0).UTC(),
				BootID: pick("", "B1", "B1", "B1", "B2"), Run: pick("", "R1", "R2", "R3"), Grant: pick("", "G1", "G2", "G3", "G4"),
				Reason: ReasonProcessExited, Mode: ModeSession}
			if e.Type == EventGatewayStopped || e.Type == EventVaultLocked {
				if rng.IntN(4) > 0 {
					continue // rarer than the rest
				}
			}
			book.Add(&e, func(s Session) { got = append(got, s) })
			model.add(&e, func(s Session) { want = append(want, s) })
		}
		book.Flush(func(s Session) { got = append(got, s) })
		for _, s := range model.open {
			want = append(want, *s)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d approvals, the scan finds %d", round, len(got), len(want))
		}
		for k := range got {
			g, w := got[k], want[k]
			if g.Run != w.Run || g.Grant != w.Grant || g.ApprovedSeq != w.ApprovedSeq || g.Signs != w.Signs ||
				g.EndSeq != w.EndSeq || g.EndReason != w.EndReason || g.EndInferred != w.EndInferred {
				t.Fatalf("round %d, approval %d:\n got %+v\nwant %+v", round, k, g, w)
			}
		}
	}
}

// An entry added after the last checkpoint is anyone's (the recipient is
// public): its event type and its detail keys are quoted, as values are,
// when they would not read as one word, so that none can move the cursor
// or pass for more fields or another line.
func TestActivityQuotesTypesAndDetailKeys(t *testing.T) {
	evs := []Event{
		{Type: "sign\x1b[1A\x1b[2K", Time: at("10:00:00"), Run: "R1"},
		{Type: EventSign, Time: at("10:00:01"), Run: "R1", Detail: map[string]string{"x\r2026-07-22 10:00:01 sign run": "R2"}},
		{Type: "session ended run=R1", Time: at("10:00:02")},
	}
	lines := Activity(evs, time.Time{})
	want := []string{
		`2026-07-22 10:00:00 "sign\x1b[1A\x1b[2K" run=R1`,
		`2026-07-22 10:00:01 sign run=R1 "x\r2026-07-22 10:00:01 sign run"=R2`,
		`2026-07-22 10:00:02 "session ended run=R1"`,
	}
	for i, w := range want {
		if lines[i].Text != w {
			t.Errorf("line %d: %q, want %q", i, lines[i].Text, w)
		}
	}
}

// Each line of the timeline about a session approval names its grant: a
// run approved for two namespaces (or two hosts) under session_scope =
// "destination" has two approvals, whose ends, and whose signatures,
// would otherwise read alike.
func TestActivityNamesTheGrant(t *testing.T) {
	var evs []Event
	for i, g := range []string{"G1", "G2"} {
		evs = append(evs,
			Event{Seq: uint64(i + 1), Type: EventSessionApproved, Time: at("10:00:00"), Run: "R1", Grant: g, Key: "SHA256:k", Detail: map[string]string{"namespace": "ns" + g}},
			Event{Seq: uint64(i + 3), Type: EventSign, Time: at("10:00:01"), Run: "R1", Grant: g, Key: "SHA256:k", Mode: ModeSession},
			Event{Seq: uint64(i + 5), Type: EventSessionEnded, Time: at("10:00:02"), Run: "R1", Grant: g, Reason: ReasonVaultLocked})
	}
	seen := map[string]bool{}
	for _, l := range Activity(evs, time.Time{}) {
		s := l.String()
		if seen[s] {
			t.Errorf("two events of two grants read alike: %q", s)
		}
		seen[s] = true
		if !strings.Contains(s, " grant=G") {
			t.Errorf("the line does not name its grant: %q", s)
		}
	}
}

// A refusal's line names the key it refused, as the line of a signature
// names the key that signed: a run refused for one key and signing with
// another reads as two keys.
func TestActivityNamesTheKeyRefused(t *testing.T) {
	evs := []Event{{Seq: 1, Type: EventActionDenied, Time: at("10:00:00"), Run: "R1", Key: "SHA256:prod", Reason: ReasonDenied,
		Detail: map[string]string{"purpose": "sshsig", "namespace": "file"}}}
	if l := Activity(evs, time.Time{})[0].String(); !strings.Contains(l, " key=SHA256:prod ") {
		t.Fatalf("the refusal does not name its key: %q", l)
	}
}

// A session approval scoped to one host (session_scope = "destination")
// names the host on its line, by the name the host inventory gave it, as
// the requests under it do: without it, the line read as an approval of
// the key's every use.
func TestActivityNamesTheHostASessionIsApprovedFor(t *testing.T) {
	evs := []Event{{Seq: 1, Type: EventSessionApproved, Time: at("10:00:00"), Run: "R1", Grant: "G1", Key: "SHA256:k",
		Dest: "SHA256:d", DestNames: []string{"prod-db-1"}, Mode: ModeSession}}
	if l := Activity(evs, time.Time{})[0].String(); !strings.Contains(l, " key=SHA256:k dest=prod-db-1 ") {
		t.Fatalf("the approval does not name the host it covers: %q", l)
	}
}

// A request that came through a host the agent is forwarded to says so
// on each of its lines, the card shown for it and its refusal as its
// signature does: without it, a card or a refusal for a host's request
// read as one for a program on this machine.
func TestActivitySaysEachForwardedRequestIsOne(t *testing.T) {
	for _, e := range []Event{
		{Seq: 1, Type: EventCardShown, Time: at("10:00:00"), Run: "R1", Card: "C1", Key: "SHA256:k", Dest: "SHA256:d", Mode: ModePerCall, Forwarding: true},
		{Seq: 2, Type: EventActionDenied, Time: at("10:00:01"), Run: "R1", Key: "SHA256:k", Dest: "SHA256:d", Reason: ReasonDenied, Forwarding: true},
		{Seq: 3, Type: EventSign, Time: at("10:00:02"), Run: "R1", Card: "C1", Key: "SHA256:k", Dest: "SHA256:d", Mode: ModePerCall, Forwarding: true},
	} {
		if l := Activity([]Event{e}, time.Time{})[0].String(); !strings.Contains(l, " forwarding=yes") {
			t.Errorf("the line of a forwarded request does not say so: %q", l)
		}
	}
}
