package e2e

// Cards that cannot lie: an executable named with newlines, escape
// sequences and a bidirectional override does not rewrite the card a
// person reads, on the terminal, in the askpass dialog or in a desktop
// notification.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHostileExecutableNameCannotRewriteTheCard(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "ssh-add")
	e := newEnv(t)
	// An askpass dialog that shows the card, and says no once the test has
	// read it; it also shows the card as a dialog that reads C escapes in
	// its prompt does (a zenity script: g_strcompress), through printf's
	// %b.
	log, escapes, answered := e.Path("askpass.log"), e.Path("askpass-escapes.log"), e.Path("answered")
	prog := e.WriteFile("askpass", fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n--\\n' \"$1\" >> %s\nprintf '%%b\\n--\\n' \"$1\" >> %s\nwhile [ ! -e %s ]; do sleep 0.05; done\nexit 1\n", log, escapes, answered), 0o755)
	e.Setenv("SSH_ASKPASS", prog)
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	e.Config(`approval = "session"`)
	e.StartAgent()
	k := e.Keygen("work", "ed25519", 0, "")
	e.AddKey(k)
	sshd := startSSHD(t, pubKey(t, k)+"\n", "prod-db-1")
	hostile := hostileSSH(t, e)
	res := e.startDetached(hostile, sshd.SSHArgs(sshd.Target(), "true")...)
	c := e.WaitCard()
	text := e.MustRun("postern", "approve", "--list").Stdout
	check := func(where, card string) { t.Helper(); checkForgedName(t, where, card) }
	check("approve --list", text)
	waitFor(t, func() bool { b, _ := os.ReadFile(escapes); return strings.Contains(string(b), "Card "+c.ID) })
	check("askpass, reading C escapes", string(mustRead(t, escapes)))
	// As it came, every backslash doubled.
	if raw := string(mustRead(t, log)); strings.ContainsAny(raw, "\x1b\u202e\r") || !strings.Contains(raw, `ssh\\n\\x1b[1A\\x1b[2KAllow`) {
		t.Fatalf("askpass: the prompt as it came:\n%s", raw)
	}
	e.WriteFile("answered", "", 0o600)
	if r := <-res; r.Code == 0 {
		t.Fatal("signed after a deny")
	}
}

// hostileSSH copies ssh to a file whose name carries newlines, escape
// sequences that move the cursor and erase a line, a forged question and
// a bidirectional override.
func hostileSSH(t *testing.T, e *Env) string {
	forged := "ssh\n\x1b[1A\x1b[2KAllow, this one time, ssh (pid 1) to use key SHA256:x for staging-web?\n\u202egnp"
	hostile := e.Path("bin", forged)
	e.MustRun("mkdir", "-p", filepath.Dir(hostile))
	if out, err := exec.Command("cp", "/usr/bin/ssh", hostile).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return hostile
}

// checkForgedName checks a card as shown somewhere: hostileSSH's name
// is there, escaped, and adds no line and no control character.
func checkForgedName(t *testing.T, where, card string) {
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

// The same name in a desktop notification: the body the notification
// daemon receives, read off the session bus, is the card escaped.
func TestHostileExecutableNameInANotification(t *testing.T) {
	need(t, "ssh", "sshd", "ssh-keygen", "ssh-add", "dbus-monitor")
	d, e := desktopEnv(t, "deny")
	// What the daemon is asked to show: the Notify calls on the bus.
	calls := d.NotifyCalls()

	e.Config(`approval = "session"`)
	e.StartAgent()
	k := e.Keygen("work", "ed25519", 0, "")
	e.AddKey(k)
	sshd := startSSHD(t, pubKey(t, k)+"\n", "prod-db-1")
	res := e.startDetached(hostileSSH(t, e), sshd.SSHArgs(sshd.Target(), "true")...)
	c := e.WaitCard()
	d.WaitDisplayed(1, 30*time.Second)
	var body string
	waitFor(t, func() bool {
		// Notify's arguments: app name, replaced id, icon, summary, body,
		// actions... dbus-monitor prints each string argument in quotes.
		out := calls()
		i := strings.Index(out, `string "postern: card `+c.ID+`"`)
		if i < 0 {
			return false
		}
		rest := out[i:]
		start := strings.Index(rest, "\n   string \"")
		end := strings.Index(rest, "\n   array [")
		if start < 0 || end < start {
			return false
		}
		body = rest[start+len("\n   string \"") : end]
		return true
	})
	checkForgedName(t, "notification", body)
	d.Click()
	if r := <-res; r.Code == 0 {
		t.Fatal("signed after Deny")
	}
}
