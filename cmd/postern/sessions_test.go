package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// sessionsRuns are a confined run, one started with --no-sandbox and one
// chosen among a requester's ancestors, as the gateway lists them.
func sessionsRuns() []api.RunState {
	confined := api.RunState{RunView: approvals.RunView{ID: "R1", Launched: true, Confinement: "confined: namespaces, Landlock ABI 7",
		ProcessView: approvals.ProcessView{PID: 7, Name: "claude", Exe: "/usr/bin/claude"}}}
	plain := api.RunState{RunView: approvals.RunView{ID: "R2", Launched: true, Confinement: "unconfined",
		ProcessView: approvals.ProcessView{PID: 8, Name: "claude", Exe: "/usr/bin/claude"}}}
	chosen := api.RunState{RunView: approvals.RunView{ID: "R3", Confinement: "unconfined",
		ProcessView: approvals.ProcessView{PID: 9, Name: "bash", Exe: "/usr/bin/bash"}}}
	return []api.RunState{confined, plain, chosen}
}

// A person who lists the runs, in postern sessions or on the console's
// runs tab, sees which are confined and which are not (--no-sandbox), as
// every card for them says: two runs of the same program are otherwise
// told apart only with --json.
func TestSessionsSayHowEachRunIsConfined(t *testing.T) {
	var b bytes.Buffer
	printSessions(&b, &api.SessionsResult{Runs: sessionsRuns()})
	m := newConsoleModel(nil, nil)
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: sessionsRuns()}})
	_, rows := m.runRows()
	for name, lines := range map[string][]string{"postern sessions": strings.Split(strings.TrimSpace(b.String()), "\n"), "the console": rows} {
		if len(lines) != 3 {
			t.Fatalf("%s lists %d lines for 3 runs:\n%s", name, len(lines), strings.Join(lines, "\n"))
		}
		for i, want := range []string{"confined: namespaces, Landlock ABI 7", "unconfined", "unconfined"} {
			if !strings.HasSuffix(lines[i], "; "+want) {
				t.Errorf("%s does not say the run is %s:\n%s", name, want, lines[i])
			}
		}
		if strings.Contains(lines[1], "confined: ") {
			t.Errorf("%s calls the run started with --no-sandbox confined:\n%s", name, lines[1])
		}
	}
}

// A run prepared and not yet started has no process: it is shown
// starting, not as a process with pid 0.
func TestSessionsShowARunNotYetStartedAsStarting(t *testing.T) {
	pending := api.RunState{RunView: approvals.RunView{ID: "R1", Launched: true, Label: "refactor"}, Pending: true}
	var b bytes.Buffer
	printSessions(&b, &api.SessionsResult{Runs: []api.RunState{pending}})
	m := newConsoleModel(nil, nil)
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{pending}}})
	_, rows := m.runRows()
	for name, line := range map[string]string{"postern sessions": b.String(), "the console": rows[0]} {
		if !strings.Contains(line, "starting") || strings.Contains(line, "pid 0") {
			t.Errorf("%s does not show the run as starting:\n%s", name, line)
		}
	}
}

// postern sessions shows the command line a run's process says it was
// started with, under its run, marked as its claim and escaped, cut as
// a card cuts it: a person tells two runs of one program apart by it.
func TestSessionsShowTheCommandARunClaims(t *testing.T) {
	r := sessionsRuns()[0]
	r.Argv = []string{"claude", "--model", "x\x1b[2Jy", strings.Repeat("a", 2000)}
	var b bytes.Buffer
	printSessions(&b, &api.SessionsResult{Runs: []api.RunState{r, sessionsRuns()[1]}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "    command (its claim): claude --model x\\x1b[2Jy aaa") || strings.Contains(b.String(), "\x1b") {
		t.Fatalf("postern sessions:\n%q", b.String())
	}
	if len(lines[1]) > 600 {
		t.Errorf("a command line of %d bytes is shown whole", len(lines[1]))
	}
}

// Two grants of one run for one key, approved under session_scope =
// "destination" for signatures in two namespaces that differ only past
// 64 bytes, and one for a host: postern sessions and the console's runs
// tab, where a person picks the grant to revoke, tell each apart by what
// it covers, the namespace whole and quoted, as its card showed it.
func TestGrantListingsSayWhatEachGrantCovers(t *testing.T) {
	long := strings.Repeat("n", 80)
	key := approvals.KeyView{Fingerprint: "SHA256:k"}
	grants := []approvals.GrantView{
		{ID: "G1", Run: "R1", Key: key, Namespace: long + "git"},
		{ID: "G2", Run: "R1", Key: key, Namespace: long + "file"},
		{ID: "G3", Run: "R1", Key: key, Dest: "SHA256:host", DestNames: []string{"prod-db-1"}},
		// Scoped to what its card asked, a login to no verified host.
		{ID: "G4", Run: "R1", Key: key, Scoped: true},
	}
	want := []string{`namespace "` + long + `git"`, `namespace "` + long + `file"`, "to SHA256:host prod-db-1", "to no verified host: covers nothing"}
	res := &api.SessionsResult{Runs: sessionsRuns()[:1], Grants: grants}
	var b bytes.Buffer
	printSessions(&b, res)
	m := newConsoleModel(nil, nil)
	m.Update(refreshMsg{sessions: res})
	_, rows := m.runRows()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for name, lines := range map[string][]string{"postern sessions": lines[len(lines)-len(want):], "the console": rows[1:]} {
		for i, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("%s lists grant %s without what it covers (%s):\n%s", name, grants[i].ID, w, lines[i])
			}
		}
	}
}

// sessions --history says what each session approval covered, as
// postern sessions said while it lived: the host of one scoped to a
// destination, the namespace, whole and quoted, of one scoped to
// signatures in it; one of neither covered the key's every use.
func TestSessionHistorySaysWhatEachApprovalCovered(t *testing.T) {
	ns := strings.Repeat("n", 80) + "git"
	book := api.NewSessionBook()
	var lines []string
	emit := func(s api.AuditSession) { lines = append(lines, sessionLine(s)) }
	for i, e := range []api.AuditEvent{
		{Type: audit.EventSessionApproved, Run: "R1", Grant: "G1", Key: "SHA256:k", Detail: map[string]string{"namespace": ns}},
		{Type: audit.EventSessionApproved, Run: "R1", Grant: "G2", Key: "SHA256:k", Dest: "SHA256:host", DestNames: []string{"prod-db-1"}},
		{Type: audit.EventSessionApproved, Run: "R1", Grant: "G3", Key: "SHA256:k"},
	} {
		e.Seq, e.Time, e.BootID = uint64(i+1), time.Now(), "boot"
		book.Add(&e, emit)
	}
	book.Flush(emit)
	if len(lines) != 3 {
		t.Fatalf("sessions --history lists %d approvals:\n%s", len(lines), strings.Join(lines, ""))
	}
	for i, want := range []string{`namespace "` + ns + `"`, "to SHA256:host prod-db-1"} {
		if !strings.Contains(lines[i], "  "+want+"  ") {
			t.Errorf("sessions --history does not say approval G%d covered only %s:\n%s", i+1, want, lines[i])
		}
	}
	if strings.Contains(lines[2], "namespace") || strings.Contains(lines[2], " to ") {
		t.Errorf("sessions --history names a scope for a session of the key's every use:\n%s", lines[2])
	}
}

// A run served again after a restart is listed as needing approval
// again only while it has no grant: once the person approved it again,
// it is listed with its grant, registered before the restart.
func TestSessionsSayARestoredRunNeedsApprovalOnlyWithoutAGrant(t *testing.T) {
	for _, grants := range []int{0, 1} {
		r := sessionsRuns()[1]
		r.Restored, r.Grants = "boot-1", grants
		var b bytes.Buffer
		printSessions(&b, &api.SessionsResult{Runs: []api.RunState{r}})
		line := b.String()
		if !strings.Contains(line, "registered before the gateway restarted") {
			t.Errorf("a restored run with %d grants is not said to be registered before the restart:\n%s", grants, line)
		}
		if needs := strings.Contains(line, "needs approval again"); needs != (grants == 0) {
			t.Errorf("a restored run with %d grants, said to need approval again: %v:\n%s", grants, needs, line)
		}
	}
}
