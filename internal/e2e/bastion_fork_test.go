package e2e

import (
	"os"
	"strings"
	"testing"
)

// ssh -f forks once logged in to the bastion, before it sends the
// command: the ssh process that connected has exited by then, and the
// bastion, which sends a command only for it, refuses it. The refusal
// says why, and what to do, where it said "denied (identity_mismatch)"
// alone, of an ssh the person never changed.
func TestBastionRefusalOfSSHFSaysWhy(t *testing.T) {
	need(t, "ssh", "sshd")
	b := newBastionWorld(t, "")
	f := b.e.WriteFile("ran", "", 0o600)
	// ssh -f exits once it forked; Run returns once its copy in the
	// background, which holds its standard error, has exited too.
	r := b.e.Run(b.sshd.OpenSSH.SSH, append([]string{"-f"}, b.sshArgs(b.sshd.Port, "echo ran >"+f)...)...)
	if out, _ := os.ReadFile(f); len(out) != 0 {
		t.Fatalf("the command of ssh -f ran: %q", out)
	}
	if e := b.entryFor("echo ran >" + f); e.End == nil || e.End.Outcome != "denied" {
		t.Fatalf("the command of ssh -f: %+v", e)
	}
	if !strings.Contains(r.Stderr, "postern: denied (identity_mismatch)") || !strings.Contains(r.Stderr, "ssh -f") {
		t.Fatalf("the refusal of ssh -f's command does not say why: %s", r)
	}
}
