package approvals

import (
	"strings"
	"testing"
)

// What a bastion request runs is named by the kind of its session
// request, which the bastion read: an exec whose command line reads like
// the card's own words for a shell or a subsystem shows as a command, and
// a shell says whether it has a terminal or runs what its input sends.
// The card said "(interactive shell)" for both a shell and the command
// "(interactive shell)", and for a shell fed a script on its input.
func TestCardNamesTheRelayedSessionByItsKind(t *testing.T) {
	card := func(relay Relay, command string, terminal bool) string {
		v := CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
			Purpose: PurposeAuth, Relay: relay, Command: command, Terminal: terminal}
		if relay == RelayProbe {
			v.ProbeOf = "01JABCDEFGHJKMNPQRSTVWXYZ0"
		}
		return strings.Split(v.Text(), "\n")[1]
	}
	shell, piped := card(RelayShell, "", true), card(RelayShell, "", false)
	for _, c := range []struct{ name, line, want string }{
		{"a shell with a terminal", shell, "Shell (relayed by the bastion): a login shell with a terminal"},
		{"a shell with no terminal", piped, "Shell (relayed by the bastion): a login shell with no terminal, running whatever the client sends on its input"},
		{"the command (interactive shell)", card(RelayExec, "(interactive shell)", true), "Command (relayed by the bastion, exactly): (interactive shell)"},
		{"the command (subsystem) sftp", card(RelayExec, "(subsystem) sftp", false), "Command (relayed by the bastion, exactly): (subsystem) sftp"},
		{"the subsystem sftp", card(RelaySubsystem, "sftp", false), "Subsystem (relayed by the bastion, exactly): sftp"},
		{"a probe", card(RelayProbe, strings.Repeat("probe script ", 100), false), "Probe (sent by the bastion for postern journal resolve): reads the remote markers of journal entry 01JABCDEFGHJKMNPQRSTVWXYZ0, and fences its run if it never started, so that it can no longer start; it runs nothing else"},
	} {
		if !strings.HasPrefix(c.line, c.want) {
			t.Errorf("%s: the card's line after the question is %q, want it to start %q", c.name, c.line, c.want)
		}
	}
	if shell == piped {
		t.Errorf("a shell fed on its input reads as one with a terminal: %q", shell)
	}
	if v := (CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}}, Purpose: PurposeAuth}); strings.Contains(v.Text(), "relayed by the bastion") {
		t.Errorf("a card for no bastion request names a relayed session:\n%s", v.Text())
	}
}

// The audit record tells the two apart as the card does.
func TestRecordNamesTheRelayedSessionByItsKind(t *testing.T) {
	w := newWorld(t)
	exec := w.e.requestEvent("sign", &Request{Relay: RelayExec, Command: []byte("(interactive shell)")}, Decision{})
	shell := w.e.requestEvent("sign", &Request{Relay: RelayShell, Terminal: true}, Decision{})
	if exec.Detail["relay"] != "exec" || exec.Detail["command"] != "(interactive shell)" {
		t.Errorf("an exec recorded as %v", exec.Detail)
	}
	if _, ok := shell.Detail["command"]; shell.Detail["relay"] != "shell" || ok {
		t.Errorf("a shell recorded as %v", shell.Detail)
	}
}

// A bastion card says how its destination was verified: by the bastion's
// own connection to the host, against known_hosts. The bastion speaks no
// session-bind (an ssh client sends it to its agent), and the card said it
// had verified the host.
func TestBastionCardSaysTheBastionVerifiedTheHost(t *testing.T) {
	dest := &DestView{Fingerprint: "SHA256:abc", Names: []string{"prod-db"}}
	for _, c := range []struct {
		relay Relay
		want  string
	}{
		{RelayExec, "Destination: host key SHA256:abc, verified by the bastion's own connection to the host, against known_hosts; host inventory: prod-db\n"},
		{RelayShell, "Destination: host key SHA256:abc, verified by the bastion's own connection to the host, against known_hosts; host inventory: prod-db\n"},
		{RelayNone, "Destination: host key SHA256:abc, verified by session-bind; host inventory: prod-db\n"},
	} {
		v := CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
			Purpose: PurposeAuth, Relay: c.relay, Command: "uptime", Destination: dest}
		if text := v.Text(); !strings.Contains(text, "\n"+c.want) {
			t.Errorf("the card of a request relayed as %q, want the line %q:\n%s", c.relay, c.want, text)
		}
	}
}

// A bastion card shows the account the bastion logs in as, whole and
// escaped, as what it will do, not as the client's claim: the bastion
// sends exactly that name, and a name cut at 64 characters read like
// another.
func TestBastionCardShowsTheLoginUserWhole(t *testing.T) {
	long := strings.Repeat("a", 70) + "\x1b[2Jroot"
	for _, c := range []struct{ user, want string }{
		{long, `Login (by the bastion, exactly): user "` + strings.Repeat("a", 70) + `\x1b[2Jroot"` + "\n"},
		{"deploy:skey", `Login (by the bastion, exactly): user "deploy:skey", which sshd logs in as "deploy" (what follows the colon is a login style)` + "\n"},
	} {
		dest := &DestView{Fingerprint: "SHA256:abc", Names: []string{"prod-db"}, User: c.user}
		v := CardView{ID: "C1", Mode: "per-call", Subjects: []RunView{{ProcessView: ProcessView{Name: "agent", PID: 9}}},
			Purpose: PurposeAuth, Relay: RelayExec, Command: "uptime", Destination: dest}
		text := v.Text()
		if !strings.Contains(text, "\n"+c.want) || strings.Contains(text, "Claimed by the client: user") {
			t.Errorf("the card of a bastion command as %q, want the line %q:\n%s", c.user, c.want, text)
		}
	}
}
