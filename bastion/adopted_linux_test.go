package bastion

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A client whose parent exited is adopted by the nearest child subreaper,
// which on a desktop is systemd --user: a process outside every run, that
// every terminal of the person descends from. The bastion takes its
// client's parent as the requester, so an orphaned postern connect would
// offer the adopter as the run to approve, and a session bound to it would
// cover every process of the person's desktop. ssh runs its ProxyCommand
// in its own session, so the bastion refuses a client whose parent is in
// another session.
func TestBastionRefusesAnAdoptedClient(t *testing.T) {
	w := newWorld(t)
	out := filepath.Join(t.TempDir(), "answer")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BASTION_TEST_ROLE=adopter", "BASTION_TEST_SOCK="+w.sock, "BASTION_TEST_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the adoption: %v %s", err, b)
	}
	answer, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(answer), "error ") {
		t.Fatalf("the bastion answered %q to a client adopted by a process of another session, and would ask about the adopter: %s", answer, w.logs.String())
	}
	if !strings.Contains(string(answer), "ProxyCommand") {
		t.Fatalf("the refusal %q does not say how postern connect is run", answer)
	}
	if n := len(w.decider.requests()); n != 0 {
		t.Fatalf("%d requests reached the decision", n)
	}
}
