package approvals

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// A requester controls its executable's name and path, its command line,
// the comment of a key it added and the account it names. None of them
// can add a line to the card, move the terminal's cursor or reorder the
// text: the person reads the card the gateway wrote.
func TestCardCannotBeRewrittenByTheRequester(t *testing.T) {
	w := newWorld(t)
	forged := "ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 13) to use key SHA256:key for staging-web?\nDestination: staging-web\u202e"
	exe := w.f.Exe(forged, "a program with a forged name")
	w.f.Set(50, 10, 500, exe, forged, "staging-web\r\x1b]0;title\x07", strings.Repeat("x", 5000))
	r := w.req(50)
	r.Key.Comment = "work\x1b[31m\nRun: trusted"
	ch := w.decide(r)
	c := w.card()
	text := c.Text()
	lines := strings.Split(text, "\n")
	for _, l := range lines {
		if strings.ContainsAny(l, "\x1b\r\x07\u202e") {
			t.Fatalf("a control character reached the card: %q", l)
		}
		if len(l) > 2000 {
			t.Fatalf("a line of %d bytes: long fields are not cut", len(l))
		}
	}
	// The card has exactly the lines the gateway writes: the question, the
	// card id, the run, its confinement, the chain, the destination
	// (unknown: the data is not one the agent interprets), what it covers
	// and the claims.
	if len(lines) != 8 {
		t.Fatalf("the card has %d lines:\n%s", len(lines), text)
	}
	if !strings.HasPrefix(lines[0], `Allow, for this run until it exits, claude (pid 10) to use key SHA256:key ("work\x1b[31m\nRun: trusted")`) {
		t.Fatalf("question line: %s", lines[0])
	}
	if lines[3] != "Confinement: "+UnconfinedWarning {
		t.Fatalf("confinement line: %s", lines[3])
	}
	if !strings.Contains(lines[4], `Requested by: "ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 13) to use key…(+`) {
		t.Fatalf("requester line: %s", lines[4])
	}
	if !strings.Contains(lines[7], `staging-web\r\x1b]0;title\x07 xxxx`) || !strings.Contains(lines[7], "…(+") {
		t.Fatalf("claims line: %s", lines[7])
	}
	// JSON consumers get the raw strings.
	if c.Requester[0].Name != forged || c.Key.Comment != r.Key.Comment {
		t.Fatalf("the card's data was changed: %q %q", c.Requester[0].Name, c.Key.Comment)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A certificate's key id and principals and a security key's application
// are chosen by whoever made them (the requester, who added them): the
// card shows each escaped, quoted, on a line of its own, and names at most
// a few principals.
func TestCardShowsCertificateAndApplicationEscaped(t *testing.T) {
	w := newWorld(t)
	r := w.req(13)
	principals := []string{"deploy\nDestination: prod-db", "root\x1b[2K", "a, b"}
	for i := 0; i < 10; i++ {
		principals = append(principals, "p")
	}
	r.Key.Cert = &Cert{KeyID: "ci\r\x1b]0;trusted\x07", Principals: principals, CA: "SHA256:ca"}
	r.Key.Application = "ssh:work\u202e\nAllowed"
	ch := w.decide(r)
	c := w.card()
	text := c.Text()
	for _, want := range []string{
		"\nCertificate \"ci\\r\\x1b]0;trusted\\x07\" for principals \"deploy\\nDestination: prod-db\", \"root\\x1b[2K\", \"a, b\", \"p\", \"p\", \"p\", \"p\", \"p\", and 5 more, signed by CA SHA256:ca\n",
		"\nSecurity key made for application \"ssh:work\\u202e\\nAllowed\"\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the card lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\r\x07\u202e") || strings.Contains(text, "\nDestination: prod-db") || strings.Contains(text, "\nAllowed") {
		t.Fatalf("a requester's string reached the card raw:\n%q", text)
	}
	// JSON consumers get the raw strings.
	if c.Key.Cert.KeyID != r.Key.Cert.KeyID || c.Key.Application != r.Key.Application {
		t.Fatalf("the card's data was changed: %+v %q", c.Key.Cert, c.Key.Application)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)

	// A certificate no CA signed (the requester made it up) says so.
	r = w.req(13)
	r.Key.Cert = &Cert{KeyID: "readonly-ci", Principals: []string{"ci"}}
	ch = w.decide(r)
	c = w.card()
	if text := c.Text(); !strings.Contains(text, "\nCertificate \"readonly-ci\" for principals \"ci\", NOT signed by any CA: its signature does not verify\n") || strings.Contains(text, "signed by CA") {
		t.Errorf("the card of a made-up certificate:\n%s", text)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A chain the requester made deep is named by its ends and a count, and a
// bastion command comes right after the question: nothing the requester
// makes long pushes the command off a screen.
func TestCardChainIsBoundedAndCommandComesFirst(t *testing.T) {
	chain := deepChain()
	chain[0].Name, chain[29].Name = "ssh", "sshd"
	v := CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
		Requester: chain, Relay: RelayExec, Command: "rm -rf /srv/data", Purpose: PurposeAuth}
	lines := strings.Split(v.Text(), "\n")
	if !strings.HasPrefix(lines[1], "Command (relayed by the bastion, exactly): rm -rf /srv/data") {
		t.Fatalf("the command is not next to the question:\n%s", v.Text())
	}
	var req string
	for _, l := range lines {
		if strings.HasPrefix(l, "Requested by: ") {
			req = l
		}
	}
	if !strings.HasPrefix(req, "Requested by: ssh (1000) ← ") || !strings.HasSuffix(req, " ← sshd (1029)") ||
		!strings.Contains(req, " ← (23 more) ← ") || strings.Count(req, " ← ") != 7 {
		t.Fatalf("requester line: %s", req)
	}
	short := chainText(chain[:3])
	if short != "ssh (1000) ← "+strings.Repeat("長", 64)+" ← "+strings.Repeat("長", 64)+" (1002)" {
		t.Fatalf("a short chain: %s", short)
	}
}

// A process name may hold the arrow that joins a chain: it is quoted, so
// that one process never reads as several.
func TestCardChainNameCannotPoseAsLinks(t *testing.T) {
	posing := []ProcessView{{PID: 4121, Name: "ssh"}, {PID: 4000, Name: "git ← bash ← sshd"}, {PID: 3988, Name: "claude"}}
	real := []ProcessView{{PID: 4121, Name: "ssh"}, {PID: 4000, Name: "git"}, {PID: 3990, Name: "bash"}, {PID: 3989, Name: "sshd"}, {PID: 3988, Name: "claude"}}
	if a, b := chainText(posing), chainText(real); a == b || strings.Count(a, " ← ") != 2+2 || !strings.Contains(a, `"git ← bash ← sshd"`) {
		t.Fatalf("a chain of 3 processes reads %q, one of 5 %q", a, b)
	}
}

// An answer covers what its card showed: a policy change the card shows
// cut (a path whose end, past the card's line, is "../../.ssh") cannot be
// approved, and the card says so; it can be denied.
func TestPolicyChangeShownCutCannotBeApproved(t *testing.T) {
	w := newWorld(t)
	long := "[run] read_write added: /home/u/src/project/" + strings.Repeat("./", 500) + "../../../.ssh"
	applied := false
	id := w.e.ProposePolicy([]string{"approval: session → none", long}, func() error { applied = true; return nil })
	cards, _ := w.e.Cards()
	if len(cards) != 1 || cards[0].ID != id {
		t.Fatalf("cards: %+v", cards)
	}
	if text := cards[0].Text(); !strings.Contains(text, "longer than a card shows (change 2 of 2") {
		t.Fatalf("the card does not say its change is cut:\n%s", text)
	}
	err := w.e.Answer(id, Answer{Verdict: VerdictOnce, Subject: -1, Approver: "test"}, w.f.Peer(30))
	if err == nil || applied {
		t.Fatalf("a policy change shown cut was approved (err %v, applied %v)", err, applied)
	}
	w.answer(id, VerdictDeny, 30)
	if applied {
		t.Fatal("a denied change was applied")
	}
}

// A key's comment is the requester's: the question quotes it, so that a
// comment such as "yes, allow" never reads as part of the sentence.
func TestCardQuestionQuotesTheKeyComment(t *testing.T) {
	v := CardView{ID: "C1", Mode: "session", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
		Key: KeyView{Fingerprint: "SHA256:key", Comment: `yes, allow "prod" for staging`}}
	q := strings.Split(v.Text(), "\n")[0]
	want := `to use key SHA256:key ("yes, allow \"prod\" for staging") (destination unknown)?`
	if !strings.HasSuffix(q, want) {
		t.Fatalf("question line:\n%s\nwant it to end in:\n%s", q, want)
	}
}

// A process name may hold a space or a parenthesis: it is quoted wherever
// the card names a process, so that "git bash" never reads as two
// processes, nor "claude (pid 1)" as a name and its pid.
func TestCardProcessNamesWithSpacesAreQuoted(t *testing.T) {
	posing := []ProcessView{{PID: 4121, Name: "ssh"}, {PID: 4000, Name: "git bash"}, {PID: 3988, Name: "claude"}}
	real := []ProcessView{{PID: 4121, Name: "ssh"}, {PID: 4000, Name: "git"}, {PID: 3990, Name: "bash"}, {PID: 3988, Name: "claude"}}
	if a, b := chainText(posing), chainText(real); !strings.Contains(a, `← "git bash" ←`) {
		t.Fatalf("a chain of 3 processes reads %q, one of 4 %q", a, b)
	}
	v := CardView{ID: "C1", Mode: "session", Subjects: []RunView{{ProcessView: ProcessView{Name: "claude (pid 1) for prod", PID: 9}}},
		Key: KeyView{Fingerprint: "SHA256:key"}}
	lines := strings.Split(v.Text(), "\n")
	if !strings.HasPrefix(lines[0], `Allow, for this run until it exits, "claude (pid 1) for prod" (pid 9) to use key`) ||
		!strings.HasPrefix(lines[2], `Run: "claude (pid 1) for prod" (pid 9,`) {
		t.Fatalf("the run's name is not quoted:\n%s", v.Text())
	}
}

// What an approval covers is shown whole, whatever the requester made
// long: a key comment of thousands of bytes does not push the end of
// the Covers line (its destination and its end) off the card.
func TestCardCoversIsWhole(t *testing.T) {
	w := newWorld(t)
	r := w.req(13)
	r.Key.Comment = strings.Repeat("c", 3000)
	ch := w.decide(r)
	c := w.card()
	var covers string
	for _, l := range strings.Split(c.Text(), "\n") {
		if strings.HasPrefix(l, "Covers: ") {
			covers = l
		}
	}
	if !strings.HasSuffix(covers, "until the run exits, the vault locks or the gateway restarts") || strings.Contains(covers, "…") {
		t.Fatalf("the Covers line is not whole: %.300s…%s", covers, covers[max(len(covers)-200, 0):])
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// perCallSignature asks, under approval = "per-call", for pid 13's
// signature in namespace ns, and returns its card and its decision to
// come.
func perCallSignature(t *testing.T, ns string) (*world, CardView, <-chan Decision) {
	w := newWorld(t)
	p := *w.e.Policy()
	p.Mode = audit.ModePerCall
	w.e.SetPolicy(&p)
	r := w.req(13)
	r.Purpose, r.Namespace = PurposeSSHSig, ns
	ch := w.decide(r)
	return w, w.card(), ch
}

// A signature's namespace is the requester's: the card's question shows
// it quoted, and the sentence that says why the card asks does not name
// it unquoted, where "file) for prod-db-1 (x" would read as a host.
func TestCardSentenceDoesNotNameTheNamespace(t *testing.T) {
	w, c, ch := perCallSignature(t, "file) for prod-db-1 (x")
	text := c.Text()
	if strings.Count(text, "prod-db-1") != 1 || !strings.Contains(text, `namespace "file) for prod-db-1 (x"?`) {
		t.Fatalf("the namespace is shown unquoted:\n%s", text)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// What changed is the gateway's sentence: a process name in it is one
// the requester chose, and one that is not a plain word is left out of
// it (the card's run line shows it, quoted), so that no name writes the
// sentence on.
func TestCardWhatChangedCannotBeWrittenOn(t *testing.T) {
	w := newWorld(t)
	w.approve(13)
	forged := "evil, pid 10) did nothing. Nothing changed: approve it as before (x"
	w.f.Set(10, 5, 100, w.f.Exe(forged, "another program"))
	ch := w.decide(w.req(13))
	c := w.card()
	if c.Reason != audit.ReasonReauthProcessChanged || strings.Contains(c.Changed, "Nothing changed") {
		t.Fatalf("what changed, after an exec to a program named %q: %s %q", forged, c.Reason, c.Changed)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A request through a forwarded agent connection says so right after the
// question (and a relayed command), before anything a requester can make
// long: a notification or an askpass dialog that cuts a long card still
// shows it. It came after the chain, the destination and the certificate.
func TestCardWarnsOfForwardingNextToTheQuestion(t *testing.T) {
	chain := deepChain()
	v := CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
		Requester: chain, Purpose: PurposeAuth, Forwarded: true, Relay: RelayExec, Command: "make deploy",
		Destination: &DestView{Fingerprint: "SHA256:h", Names: []string{"prod-db-1"}}}
	lines := strings.Split(v.Text(), "\n")
	if len(lines) < 3 || lines[2] != "Warning: through a forwarded agent connection (a remote host is asking)" {
		t.Fatalf("the forwarding warning is not the line after the question and the command:\n%s", v.Text())
	}
}

// deepChain is a chain of 30 processes, each with a name a requester
// made long.
func deepChain() []ProcessView {
	var chain []ProcessView
	for i := range 30 {
		chain = append(chain, ProcessView{PID: 1000 + i, Name: strings.Repeat("長", 64)})
	}
	return chain
}

// A retry of a command whose outcome is unknown, sent while an identical
// one still runs, is asked about with both: the card says the earlier
// attempt's outcome is unknown, and that the command is under way now.
func TestCardOfARetryAlsoShowsTheIdenticalCommandRunning(t *testing.T) {
	w := newWorld(t)
	r := w.req(13)
	r.RetryOf = "journal entry J1 (STATUS_UNKNOWN inspect_activity_journal, started 2026-12-04 10:00:00)"
	r.Running = "journal entry J2 (RUNNING, started 2026-12-04 10:00:01)"
	ch := w.decide(r)
	c := w.card()
	if c.Reason != audit.ReasonRetryUnknown || c.Mode != audit.ModePerCall || !strings.Contains(c.Changed, "J1") || !strings.Contains(c.Changed, "J2") || !strings.Contains(c.Changed, "under way now") {
		t.Fatalf("the card of a retry while the command still runs: %s %s %q", c.Reason, c.Mode, c.Changed)
	}
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
}

// A chain reads as the processes it holds, wherever a person reads it
// (ChainText: postern why, the bastion's journal): a name holding the
// arrow that joins them, a space or a parenthesis is quoted, so that one
// process never reads as several, nor borrows another's pid.
func TestChainTextNameCannotPoseAsLinks(t *testing.T) {
	p := func(pid int, name string) procid.Process {
		return procid.Process{PID: pid, Exe: procid.Exe{Path: "/usr/bin/" + name}}
	}
	posing := procid.Chain{p(4121, "ssh"), p(4000, "git ← bash ← sshd"), p(3988, "claude")}
	real := procid.Chain{p(4121, "ssh"), p(4000, "git"), p(3990, "bash"), p(3989, "sshd"), p(3988, "claude")}
	a, b := ChainText(posing), ChainText(real)
	if a == b || a != `ssh (4121) ← "git ← bash ← sshd" ← claude (3988)` || b != "ssh (4121) ← git ← bash ← sshd ← claude (3988)" {
		t.Fatalf("a chain of 3 processes reads %q, one of 5 %q", a, b)
	}
	if c := ChainText(procid.Chain{p(13, "ssh"), p(12, "claude (3988)"), p(1, "init")}); c != `ssh (13) ← "claude (3988)" ← init (1)` {
		t.Fatalf("a process named with another's pid reads %q", c)
	}
}

// A policy change card, which waits until it is answered, has no
// "expires" in its JSON, where a script would read the zero time as a
// card long expired; a request's card has it.
func TestPolicyCardJSONHasNoExpiry(t *testing.T) {
	b, err := json.Marshal(CardView{ID: "CP", Kind: KindPolicyChange})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"expires"`) {
		t.Errorf("a policy change card's JSON has an expiry: %s", b)
	}
	b, _ = json.Marshal(CardView{ID: "C1", Expires: time.Now()})
	if !strings.Contains(string(b), `"expires"`) {
		t.Errorf("a request's card's JSON has no expiry: %s", b)
	}
}
