package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
)

// hostile is a name a run can give its executable: it tries to end the
// line, clear the screen and reorder the text.
const hostile = "ssh\n\x1b[2Jrequested by bash (1)\u202e"

// noRaw fails when out holds a control character or the hostile name's
// second line as a line of its own.
func noRaw(t *testing.T, where, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\u202e\r") || strings.Contains(out, "\n\x1b") || strings.Contains(out, "\nrequested by bash") {
		t.Fatalf("%s: a requester's string reached the output raw:\n%q", where, out)
	}
	if !strings.Contains(out, `ssh\n\x1b[2Jrequested by bash (1)\u202e`) {
		t.Fatalf("%s: the name is not shown escaped:\n%s", where, out)
	}
}

func TestWhyShowsRequesterEscaped(t *testing.T) {
	var b bytes.Buffer
	printWhy(&b, &api.WhyResult{Last: &approvals.Why{Time: time.Now(), Outcome: "DENIED", Requester: hostile + " (4121) ← bash ← claude (3988)",
		Key: "SHA256:k", Explain: "the card was denied", Next: "stop"}})
	noRaw(t, "why", b.String())
	if n := strings.Count(b.String(), "\n"); n != 6 {
		t.Fatalf("why printed %d lines, want 6:\n%s", n, b.String())
	}
	// A key's comment is its adder's, and a run adds keys.
	b.Reset()
	printWhy(&b, &api.WhyResult{Last: &approvals.Why{Time: time.Now(), Outcome: "ALLOWED",
		Key: "SHA256:k (" + hostile + ")", Explain: "covered by a grant", Next: "nothing"}})
	noRaw(t, "why's key", b.String())
	if n := strings.Count(b.String(), "\n"); n != 5 {
		t.Fatalf("why printed %d lines, want 5:\n%s", n, b.String())
	}
	// A namespace is the signer's to choose.
	b.Reset()
	printWhy(&b, &api.WhyResult{Last: &approvals.Why{Time: time.Now(), Outcome: "DENIED policy_deny",
		Key: "SHA256:k", Namespace: "git" + hostile, Explain: "a rule", Next: "stop"}})
	noRaw(t, "why's namespace", b.String())
	if !strings.Contains(b.String(), "  namespace:   \"git") {
		t.Fatalf("why does not name the namespace:\n%s", b.String())
	}
}

func TestSessionHistoryShowsRunEscaped(t *testing.T) {
	line := sessionLine(api.AuditSession{Run: "R1", Grant: "G1", Key: "SHA256:k", Approver: "tty:/dev/pts/3",
		Label: "deploy\x1b]0;x\x07", Process: &audit.Process{PID: 7, Exe: "/tmp/" + hostile}, Approved: time.Now()})
	noRaw(t, "sessions --history", line)
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, `label "deploy\x1b]0;x\x07"`) {
		t.Fatalf("sessions --history line:\n%s", line)
	}
}

// An entry after the audit log's last checkpoint may be anyone's (its
// recipient is public): sessions --history escapes the run, grant, key
// end reason and host it names as it escapes a label.
func TestSessionHistoryShowsForgedFieldsEscaped(t *testing.T) {
	for _, s := range []api.AuditSession{
		{Run: hostile, Grant: "G1", Key: "SHA256:k"},
		{Run: "R1", Grant: hostile, Key: "SHA256:k"},
		{Run: "R1", Grant: "G1", Key: hostile},
		{Run: "R1", Grant: "G1", Key: "SHA256:k", Ended: time.Now(), EndReason: hostile},
		{Run: "R1", Grant: "G1", Key: "SHA256:k", Dest: hostile, DestNames: []string{"db-1"}},
	} {
		s.Approved = time.Now()
		line := sessionLine(s)
		noRaw(t, "sessions --history", line)
		if strings.Count(line, "\n") != 1 {
			t.Fatalf("sessions --history line:\n%s", line)
		}
	}
}

// postern sessions quotes a run's name and label, and a destination's
// names, where they hold a space, a parenthesis, a comma or an arrow: a
// run named "agent (pid 1) /usr/bin/agent  via postern run, 9 grants,
// label prod" read as the run the person started, and a host named
// "db-1,prod-db-1" as two names.
func TestSessionsQuotesNamesThatHoldWords(t *testing.T) {
	var b bytes.Buffer
	printSessions(&b, &api.SessionsResult{
		Runs: []api.RunState{{RunView: approvals.RunView{ID: "R1", Label: "x, label prod",
			ProcessView: approvals.ProcessView{PID: 7, Name: "agent (pid 1) /usr/bin/agent  via postern run, 9 grants", Exe: "/tmp/a"}}}},
		Grants: []approvals.GrantView{{ID: "G1", Run: "R1", Key: approvals.KeyView{Fingerprint: "SHA256:k"}, Dest: "SHA256:h",
			DestNames: []string{"db-1,prod-db-1", "db-2"}, Approved: time.Now(), Approver: "tty"}},
	})
	out := b.String()
	for _, want := range []string{
		`run R1  "agent (pid 1) /usr/bin/agent  via postern run, 9 grants" (pid 7) /tmp/a`,
		`, label "x, label prod"`,
		`to SHA256:h "db-1,prod-db-1",db-2  since`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("postern sessions does not show %s:\n%s", want, out)
		}
	}
}

// A policy change quotes the config file, which a run may write: status
// shows it escaped, and so the reload error that quotes it.
func TestStatusShowsConfigEscaped(t *testing.T) {
	var b bytes.Buffer
	st := &api.Status{Config: api.ConfigStatus{Path: "/home/u/.config/postern/config.toml", Approval: "session",
		Pending: []string{"[run] read_write added: /tmp/" + hostile}, Error: "line 3: " + hostile}}
	printStatus(&b, st)
	if strings.ContainsAny(b.String(), "\x1b\u202e\r") || strings.Contains(b.String(), "\nrequested by bash") {
		t.Fatalf("status printed the config file's text raw:\n%q", b.String())
	}
	if n := strings.Count(b.String(), `ssh\n\x1b[2Jrequested by bash (1)\u202e`); n != 2 {
		t.Fatalf("status shows the change and the error escaped %d times, want 2:\n%s", n, b.String())
	}
}

// Why the audit log cannot be written quotes the error of a file's path,
// and the syslog address is the configuration's: status shows both
// escaped, as why does.
func TestStatusShowsAuditFailureEscaped(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, &api.Status{Audit: api.AuditStatus{Enabled: true, Path: "/s/audit.log",
		Failing: "write /s/" + hostile + ": no space left on device", FailingSince: "2026-12-05T01:00:00Z",
		Syslog: &api.SyslogStatus{Address: "unix:/run/" + hostile}}})
	noRaw(t, "status's audit lines", b.String())
	if n := strings.Count(b.String(), `ssh\n\x1b[2Jrequested by bash (1)\u202e`); n != 2 {
		t.Fatalf("status shows the failure and the address escaped %d times, want 2:\n%s", n, b.String())
	}
}

// The journal shows what the host and the client said escaped: the
// signal name a host ended a command with, the user name the client
// gave (cut on its own, so that the host stays in sight), and a
// command's bytes, escaped once, so that two commands never read alike.
func TestJournalShowsHostsAndClientsWordsEscaped(t *testing.T) {
	user := "root@prod-db-1.example.com:22" + strings.Repeat("\u3164", 40)
	e := &api.JournalEntry{ID: "J1", Kind: "exec", Command: []byte("true"),
		Target:  journal.Target{User: user, Host: "evil.example", Port: 22, HostKey: "SHA256:x"},
		Started: time.Now(),
		End:     &journal.End{At: time.Now(), Outcome: api.OutcomeSignaled, Signal: "TERM\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"}}
	var b bytes.Buffer
	printEntry(&b, e)
	for what, out := range map[string]string{"journal show": b.String(), "journal list": entryLine(e)} {
		if strings.ContainsAny(out, "\x1b\u3164") {
			t.Errorf("%s prints the host's or the client's words raw:\n%q", what, out)
		}
		if !strings.Contains(out, "@evil.example:22") {
			t.Errorf("%s does not name the host the command went to:\n%s", what, out)
		}
	}
	ctl := &api.JournalEntry{ID: "J1", Kind: "exec", Command: []byte("rm -rf /srv/app\x01")}
	lit := &api.JournalEntry{ID: "J1", Kind: "exec", Command: []byte(`"rm -rf /srv/app\x01"`)}
	if a, b := entryLine(ctl), entryLine(lit); a == b || !strings.HasSuffix(a, ` exec rm -rf /srv/app\x01`) {
		t.Errorf("journal list shows two commands as %q and %q", a, b)
	}
	// The kind of session comes first: the command sftp is not the
	// subsystem sftp.
	sub := &api.JournalEntry{ID: "J1", Kind: "subsystem", Command: []byte("sftp")}
	cmd := &api.JournalEntry{ID: "J1", Kind: "exec", Command: []byte("sftp")}
	if a, b := entryLine(sub), entryLine(cmd); a == b || !strings.HasSuffix(a, " subsystem sftp") {
		t.Errorf("journal list shows a subsystem and a command as %q and %q", a, b)
	}
	var sa, sb bytes.Buffer
	printEntry(&sa, ctl)
	printEntry(&sb, lit)
	if sa.String() == sb.String() || !strings.Contains(sa.String(), `command   exec rm -rf /srv/app\x01 `) {
		t.Errorf("journal show shows two commands as\n%s\nand\n%s", sa.String(), sb.String())
	}
}

// failingSecondPage serves one full page of journal entries, then fails.
type failingSecondPage struct{ pages int }

func (f *failingSecondPage) JournalPage(_ context.Context, a api.JournalArgs) ([]*api.JournalEntry, error) {
	f.pages++
	if f.pages > 1 {
		return nil, errors.New("the gateway went away")
	}
	var page []*api.JournalEntry
	for i := range a.Limit {
		page = append(page, &api.JournalEntry{ID: fmt.Sprintf("J%04d", i), Kind: "exec", Command: []byte("true")})
	}
	return page, nil
}

func (f *failingSecondPage) JournalEntry(context.Context, string) (*api.JournalEntry, error) {
	return nil, errors.New("not served")
}

// A JSON listing that fails after its first page says so: the array
// printed is left unclosed (no JSON reader takes it for the whole
// listing) and the error says it is incomplete.
func TestJSONListingCutShortSaysSo(t *testing.T) {
	var b bytes.Buffer
	err := listJournal(context.Background(), &failingSecondPage{}, &b, "", 0, true)
	if err == nil || !strings.Contains(err.Error(), "the gateway went away") || !strings.Contains(err.Error(), "the listing is incomplete") {
		t.Fatalf("error: %v", err)
	}
	if json.Valid(b.Bytes()) || !strings.HasPrefix(b.String(), "[\n") {
		t.Fatalf("the output of a listing cut short reads as a whole JSON array (or as none):\n%.200s", b.String())
	}
}

// An error can carry words from elsewhere raw: a server's disconnect
// message in a failed SSH handshake ("journal resolve" connects to the
// host before its host key is known to be the right one), an upstream
// agent's. The error line shows them escaped, on one line, and leaves
// alone what a message quoted already.
func TestErrorLineShowsForeignWordsEscaped(t *testing.T) {
	var out, errw bytes.Buffer
	err := fmt.Errorf(`probing "a\\b": ssh: handshake failed: ssh: disconnect, reason 2: %s`, hostile)
	if code := report(&out, &errw, "journal", err); code != exitFailure {
		t.Fatalf("exit %d", code)
	}
	noRaw(t, "error line", errw.String())
	if !strings.HasPrefix(errw.String(), `postern: error: probing "a\\b": ssh:`) {
		t.Fatalf("what the message quoted is not shown as it was:\n%s", errw.String())
	}
	if n := strings.Count(errw.String(), "\n"); n != 1 {
		t.Fatalf("the error takes %d lines:\n%s", n, errw.String())
	}
}

// A notification service names itself, and any program of the user's
// that reaches the session bus can be the service; the configuration
// file, which an unconfined run can write, is quoted by its errors.
// status, doctor and agent --ensure show both escaped.
func TestApproversAndFindingsShownEscaped(t *testing.T) {
	as := []api.Approver{{Name: "console", Detail: "none attached"},
		{Name: "notification", Reachable: true, Detail: hostile + " 1.0 (pid 7), with Approve once and Deny"}}
	var b bytes.Buffer
	printStatus(&b, &api.Status{Approvers: as})
	noRaw(t, "status", b.String())
	b.Reset()
	for _, l := range whereCards(as) {
		fmt.Fprintln(&b, l)
	}
	noRaw(t, "agent --ensure", b.String())
	b.Reset()
	printFindings(&b, []finding{
		{Check: "approvers", Status: "ok", Detail: approverLine(as[1])},
		{Check: "config", Status: "fail", Detail: `config.toml: unknown setting "` + hostile + `"`, Fix: "fix the file"},
	})
	noRaw(t, "doctor", b.String())
	if n := strings.Count(b.String(), "\n"); n != 3 {
		t.Fatalf("doctor printed %d lines, want 3:\n%s", n, b.String())
	}
}

// The journal's file can be rewritten by any program of the user while
// no gateway runs, and its reader checks the shape of an entry (ids,
// kinds, outcomes), not its free text: journal show prints the approval
// and the host key as the file gives them, escaped.
func TestJournalShowsTheFilesFreeTextEscaped(t *testing.T) {
	e := &api.JournalEntry{ID: "J1", Kind: "exec", Command: []byte("true"), Approval: hostile,
		Target: journal.Target{User: "deploy", Host: "db-1", Port: 22, HostKey: "SHA256:" + hostile}, Started: time.Now()}
	var b bytes.Buffer
	printEntry(&b, e)
	noRaw(t, "journal show", b.String())
}

// A grant that ends when its session lifetime passes says until when, as
// --json does: the person reading the list sees it will end.
func TestSessionsSaysUntilWhenAGrantLasts(t *testing.T) {
	var b bytes.Buffer
	approved := time.Date(2026, 12, 4, 9, 0, 0, 0, time.Local)
	printSessions(&b, &api.SessionsResult{Grants: []approvals.GrantView{
		{ID: "G1", Run: "R1", Key: approvals.KeyView{Fingerprint: "SHA256:k"}, Approved: approved, Approver: "tty", Expires: approved.Add(8 * time.Hour)},
		{ID: "G2", Run: "R1", Key: approvals.KeyView{Fingerprint: "SHA256:k"}, Approved: approved, Approver: "tty"},
	}})
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], "until 2026-12-04 17:00") || strings.Contains(lines[2], "until") {
		t.Fatalf("postern sessions does not say until when the first grant lasts, and only it:\n%s", b.String())
	}
}
