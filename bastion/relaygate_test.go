package bastion

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/safetext"
)

// A denied command is not sent: nothing is signed, the host sees no
// login, the client exits 254 and the journal says safe to retry.
func TestRelayDenied(t *testing.T) {
	w := newWorld(t)
	w.decider.setDeny(func(*approvals.Request) audit.Reason { return "policy_deny" })
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	_, errOut, err := w.run("rm -rf /srv", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, "denied (policy_deny); the command was not sent") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	if w.keys.signatures() != 0 || w.host.logins() != 0 || len(w.host.seen()) != 0 {
		t.Fatalf("signed %d times, %d logins on the host", w.keys.signatures(), w.host.logins())
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeDenied {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
}

// A command longer than a card shows whole is refused before anyone is
// asked: an approval covers what its card showed. One that fits (escaped,
// as the card shows it) is asked about and sent.
func TestRelayRefusesACommandLongerThanACard(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	long := "echo " + strings.Repeat("x", safetext.Command) // 405 characters
	_, errOut, err := w.run(long, nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, "longer than a card shows (405 characters of 400") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	// Escaped, a control character takes four: 99 of them do not fit.
	_, _, err = w.run("echo "+strings.Repeat("\x01", 99), nil)
	if exitStatus(t, err) != ExitDenied {
		t.Fatalf("a command whose escaped form is cut: %v", err)
	}
	if len(w.decider.requests()) != 0 || w.keys.signatures() != 0 || w.host.logins() != 0 || len(w.entries()) != 0 {
		t.Fatalf("asked %d times, signed %d times, %d logins, %d journal entries", len(w.decider.requests()), w.keys.signatures(), w.host.logins(), len(w.entries()))
	}
	if _, _, err := w.run("echo "+strings.Repeat("x", safetext.Command-5), nil); err != nil {
		t.Fatalf("a command that fits: %v", err)
	}
}

// While the keyring is locked the command is refused as vault_locked.
func TestRelayLocked(t *testing.T) {
	w := newWorld(t)
	w.keys.lock()
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, string(audit.ReasonVaultLocked)) || w.host.logins() != 0 {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
}

// Later commands on one client connection share the host connection and
// each asks the decision again; a denied one is not sent.
func TestRelayEachCommandAsks(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, s.Command)
			s.exit(0)
		}
	})
	c := w.dial()
	run := func(cmd string) (string, error) {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		out, err := sess.Output(cmd)
		return string(out), err
	}
	if out, err := run("first"); err != nil || out != "first" {
		t.Fatalf("first: %q %v", out, err)
	}
	if out, err := run("second"); err != nil || out != "second" {
		t.Fatalf("second: %q %v", out, err)
	}
	w.decider.setDeny(func(r *approvals.Request) audit.Reason {
		if string(r.Command) == "third" {
			return "denied"
		}
		return ""
	})
	if _, err := run("third"); exitStatus(t, err) != ExitDenied {
		t.Fatalf("third: %v", err)
	}
	reqs := w.decider.requests()
	if len(reqs) != 3 || reqs[0].Action != approvals.ActionSign || reqs[1].Action != approvals.ActionCommand || reqs[2].Action != approvals.ActionCommand {
		t.Fatalf("decisions: %d", len(reqs))
	}
	if w.host.logins() != 1 || len(w.host.seen()) != 2 {
		t.Fatalf("%d logins, %d commands on the host", w.host.logins(), len(w.host.seen()))
	}
}

// When the host asks for more than a key (AuthenticationMethods
// publickey,password), the approved signature is not enough and the
// command cannot start: the client is told, the journal says it was not
// sent, and the bastion keeps serving.
func TestRelayAuthenticationIncomplete(t *testing.T) {
	w := newWorldWith(t, nil, func(hc *ssh.ServerConfig) {
		hc.VerifiedPublicKeyCallback = func(ssh.ConnMetadata, ssh.PublicKey, *ssh.Permissions, string) (*ssh.Permissions, error) {
			return nil, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{
				PasswordCallback: func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) { return nil, errors.New("no") },
			}}
		}
	})
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitUnreachable || !strings.Contains(errOut, "the command was not sent") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeFailedToStart {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
	if w.keys.signatures() != 1 {
		t.Fatalf("signed %d times", w.keys.signatures())
	}
}

// A host whose key is not in known_hosts is refused before anything is
// signed.
func TestRelayUnknownHostKey(t *testing.T) {
	// known_hosts knows another port of the host, under another key.
	other := writeTemp(t, "[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGN0gKQsFq2EIkFmCj5b5ESy1cxqxNMUrFVWSSpA1bsx\n")
	w := newWorldWith(t, func(c *Config) { c.KnownHosts = []string{filepath.Join(t.TempDir(), "none"), other} }, nil)
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitUnreachable || !strings.Contains(errOut, "is not in your known_hosts") || w.keys.signatures() != 0 {
		t.Fatalf("err %v, stderr %q, signed %d", err, errOut, w.keys.signatures())
	}
	if e := w.only(); e.End.Outcome != journal.OutcomeFailedToStart {
		t.Fatalf("journal %+v", e.End)
	}
}

// A command or subsystem name with a NUL byte is refused before it is
// journaled or sent: OpenSSH's sshd reads it as a C string and ends the
// whole connection on one that holds a NUL, which would cut every
// command running on that connection (they would end unknown).
func TestRelayRefusesACommandWithANULByte(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	_, errOut, err := w.run("true\x00; deploy", nil)
	if err == nil || len(w.host.seen()) != 0 || len(w.entries()) != 0 || !strings.Contains(errOut, "NUL") {
		t.Fatalf("a command with a NUL byte: %v, stderr %q, %d sent to the host, %d journaled", err, errOut, len(w.host.seen()), len(w.entries()))
	}
}
