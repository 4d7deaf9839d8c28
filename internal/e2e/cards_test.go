package e2e

// Cards that cannot lie: an executable named with newlines, escape
// sequences and a bidirectional override does not rewrite the card a
// person reads, on the terminal or in the askpass dialog.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostileExecutableNameCannotRewriteTheCard(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "ssh-add")
	e := newEnv(t)
	// An askpass dialog that shows the card, and says no once the test has
	// read it.
	log, answered := e.Path("askpass.log"), e.Path("answered")
	prog := e.WriteFile("askpass", fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n--\\n' \"$1\" >> %s\nwhile [ ! -e %s ]; do sleep 0.05; done\nexit 1\n", log, answered), 0o755)
	e.Setenv("SSH_ASKPASS", prog)
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	e.Config(`approval = "session"`)
	e.StartAgent()
	k := e.Keygen("work", "ed25519", 0, "")
	e.AddKey(k)
	sshd := startSSHD(t, pubKey(t, k)+"\n", "prod-db-1")
	forged := "ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 1) to use key SHA256:x for staging-web?\n\u202egnp"
	hostile := e.Path("bin", forged)
	e.MustRun("mkdir", "-p", filepath.Dir(hostile))
	if out, err := exec.Command("cp", "/usr/bin/ssh", hostile).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	res := e.startDetached(hostile, sshd.SSHArgs(sshd.Target(), "true")...)
	c := e.WaitCard()
	text := e.MustRun("postern", "approve", "--list").Stdout
	check := func(where, card string) {
		t.Helper()
		if strings.ContainsAny(card, "\x1b\u202e\r") {
			t.Fatalf("%s: a control character reached the card:\n%q", where, card)
		}
		for i, l := range strings.Split(strings.TrimSpace(card), "\n") {
			if i > 0 && strings.HasPrefix(l, "Allow") {
				t.Fatalf("%s: the requester added a question line:\n%s", where, card)
			}
		}
		if !strings.Contains(card, `ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 1)`) || !strings.Contains(card, `\u202egnp`) {
			t.Fatalf("%s: the name is not shown escaped:\n%s", where, card)
		}
	}
	check("approve --list", text)
	waitFor(t, func() bool { return strings.Contains(string(mustRead(t, log)), "Card "+c.ID) })
	check("askpass", string(mustRead(t, log)))
	e.WriteFile("answered", "", 0o600)
	if r := <-res; r.Code == 0 {
		t.Fatal("signed after a deny")
	}
}
