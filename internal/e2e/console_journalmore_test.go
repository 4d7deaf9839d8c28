package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/postern/postern/bastion/journal"
)

// The journal view lists at most a screenful of the commands whose
// outcome is unknown: with more of them than it lists, its tab does not
// count the ones listed as if they were all, and the view says where
// the others are.
func TestFullScreenConsoleSaysItDoesNotListEveryUnknownCommand(t *testing.T) {
	w := newApprovalWorld(t, "[bastion]\nenabled = true\n")
	commands := make([]string, 25)
	for i := range commands {
		commands[i] = fmt.Sprintf("systemctl restart app-%d", i)
	}
	lostCommands(t, w, commands...)

	con := startConsoleTerm(t, w)
	con.keys("Tab")
	con.keys("Tab")
	con.wait("systemctl restart app-")
	con.wait("Unknown commands (")
	if s := con.screen(); strings.Contains(s, "Unknown commands (20)") || !strings.Contains(s, "postern journal list --status STATUS_UNKNOWN") {
		t.Fatalf("25 commands have an unknown outcome; the console's journal view:\n%s", s)
	}
}

// lostCommands puts in w's journal, while its gateway is stopped, an
// entry for each of commands whose outcome the bastion lost (dispatched,
// then the connection to the host cut), and starts the gateway again.
func lostCommands(t *testing.T, w *approvalWorld, commands ...string) []*journal.Entry {
	t.Helper()
	w.agent.Stop()
	j, err := journal.Open(w.e.Path("state", "postern", "journal.db"), "e2e")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.agent = w.e.StartAgent() }()
	defer j.Close()
	var entries []*journal.Entry
	for _, c := range commands {
		entry := &journal.Entry{
			Requester: "ssh (4121) ← bash (4000)", RequesterPID: 4121,
			Target: journal.Target{User: "deploy", Host: "db-1.example", Port: 22, HostKey: "SHA256:notverified"},
			Kind:   journal.KindExec, Command: []byte(c), Approval: "approved_once C0000000a",
		}
		if err := j.Start(entry); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Dispatched(entry.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := j.MarkUnknown(entry.ID, journal.Unknown{Reason: "upstream_lost", Detail: "the connection to the host was cut"}); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry)
	}
	return entries
}
