package e2e

// The control plane a run cannot edit: a configuration that loosens
// authority waits for a person's approval (even across a restart), a
// host name removed from known_hosts never lowers the host's mode, and a
// rewritten askpass program is never asked. Each file is changed here
// from outside any sandbox, as an unconfined run could.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLooseningPolicyWaitsForApproval(t *testing.T) {
	w := newApprovalWorld(t, "[[rule]]\nhost = \"prod-*\"\napproval = \"per-call\"\n", "prod-db")
	prod := sshCmd(w.sshd, "-o", "HostKeyAlias=prod-db")
	strict := fmt.Sprintf("known_hosts = [%q]\n[[rule]]\nhost = \"prod-*\"\napproval = \"per-call\"\n", w.sshd.KnownHosts)
	loose := fmt.Sprintf("known_hosts = [%q]\napproval = \"none\"\n", w.sshd.KnownHosts)
	w.e.Config(loose)
	c := w.e.WaitCard()
	text := w.e.MustRun("postern", "approve", "--list").Stdout
	if !strings.Contains(text, "Allow this change of postern's configuration?") || !strings.Contains(text, "approval: session → none") ||
		!strings.Contains(text, `rule removed: host = "prod-*": per-call`) {
		t.Fatalf("policy change card:\n%s", text)
	}
	var st struct {
		Config struct {
			Pending []string `json:"pending_changes"`
		} `json:"config"`
	}
	json.Unmarshal([]byte(w.e.MustRun("postern", "status", "--json").Stdout), &st)
	if len(st.Config.Pending) != 2 {
		t.Fatalf("status: %+v", st)
	}
	// Until a person approves, the production host still asks every time.
	res := make(chan Result, 1)
	go func() { res <- w.e.Run("ssh", strings.Fields(prod)[1:]...) }()
	var login cardJSON
	waitFor(t, func() bool {
		for _, x := range w.e.cards() {
			if x.ID != c.ID {
				login = x
				return true
			}
		}
		return false
	})
	if login.Mode != "per-call" {
		t.Fatalf("login card under a pending change: %+v", login)
	}
	w.e.MustRun("postern", "deny", login.ID)
	if r := <-res; r.Code == 0 {
		t.Fatal("signed without an answer")
	}
	// A restart does not put the unapproved file in force.
	w.agent.Stop()
	w.agent = w.e.StartAgent()
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	c = w.e.WaitCard()
	if !strings.Contains(w.e.MustRun("postern", "approve", "--list").Stdout, "approval: session → none") {
		t.Fatal("the pending change was forgotten across a restart")
	}
	// A change of the configuration is approved once: a session, or a
	// subject to bind, is refused, and the card stays up.
	for _, how := range [][]string{{"--session"}, {"--subject", "0"}} {
		r := w.e.Run("postern", append([]string{"approve", c.ID}, how...)...)
		if r.Code != 2 || !strings.HasPrefix(r.Stderr, "postern: error: ") || !strings.Contains(r.Stderr, "approved once or denied") {
			t.Errorf("postern approve %s %s on a policy change card: %s", c.ID, strings.Join(how, " "), r)
		}
	}
	// The person approves: the looser policy is in force.
	w.approve(c.ID, "--once")
	w.agent.WaitLog(t, "configuration reloaded")
	mustSucceed(t, "signed under the approved change", w.e.Run("ssh", strings.Fields(prod)[1:]...))
	w.e.NoCard()
	// Tightening takes effect at once, without a card.
	w.e.Config(strict)
	w.agent.WaitLog(t, "approval=session")
	go func() { res <- w.e.Run("ssh", strings.Fields(prod)[1:]...) }()
	login = w.e.WaitCard()
	if login.Mode != "per-call" {
		t.Fatalf("after tightening: %+v", login)
	}
	w.e.MustRun("postern", "deny", login.ID)
	<-res
	// A broken file keeps the policy in force and says why.
	w.e.Config("approval = \"maybe\"\n")
	waitFor(t, func() bool {
		return strings.Contains(w.e.MustRun("postern", "status").Stdout, "last reload failed, previous policy in force")
	})
}

func TestChangedAskpassIsNotAsked(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-keygen")
	e := newEnv(t)
	e.Config("approval = \"per-call\"\n")
	log, allow := askpassStub(e)
	os.WriteFile(allow, nil, 0o600)
	a := e.StartAgent()
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	msg := e.WriteFile("m", "x", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	// The program is rewritten to say yes without asking anyone.
	prog := e.Path("askpass")
	os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755)
	os.Remove(log)
	a.Reconfigure(t, "approval = \"per-call\"\ncard_timeout = \"2s\"\n")
	start := time.Now()
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatal("the rewritten askpass program approved")
	}
	if time.Since(start) < 2*time.Second {
		t.Fatal("refused before the card timed out: something answered it")
	}
	a.WaitLog(t, "askpass approvals are off")
	if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "askpass   off: the askpass program changed since the gateway started") {
		t.Fatalf("status:\n%s", st)
	}
}
