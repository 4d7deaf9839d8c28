package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keyEvent is what the test reads of an agent_key_added or
// agent_key_removed event.
type keyEvent struct {
	Type     string            `json:"type"`
	Key      string            `json:"key"`
	Reason   string            `json:"reason"`
	Approver string            `json:"approver"`
	Detail   map[string]string `json:"detail"`
}

// TestAgentKeyChangesAudited: what ssh-add does to the agent's keys, and
// what the agent drops on its own, is in the audit log: who added a key
// and with which constraints, who removed it, which lifetime ended, what
// SIGUSR1 wiped. SIGUSR1 wipes the added keys while the vault is locked
// too: they do not come back at the next unlock.
func TestAgentKeyChangesAudited(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "audited keys\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)

	constrained := e.Keygen("constrained", "ed25519", 0, "")
	short := e.Keygen("short", "ed25519", 0, "")
	wiped := e.Keygen("wiped", "ecdsa", 0, "")
	e.MustRun("ssh-add", "-c", "-t", "600", constrained)
	e.MustRun("ssh-add", "-d", constrained+".pub")
	e.AddKey(short, "-t", "1")
	e.AddKey(wiped)

	events := func() map[string][]keyEvent {
		out := e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass).Stdout
		byKey := map[string][]keyEvent{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev keyEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("audit show line %q: %v", line, err)
			}
			if strings.HasPrefix(ev.Type, "agent_key_") {
				byKey[ev.Key] = append(byKey[ev.Key], ev)
			}
		}
		return byKey
	}
	byKey := events()
	for end := time.Now().Add(15 * time.Second); len(byKey[fingerprint(t, e, short)]) < 2 && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		byKey = events()
	}

	byAdd := func(ev keyEvent) bool {
		return strings.Contains(ev.Approver, "exe=") && strings.Contains(ev.Approver, "ssh-add")
	}
	c := byKey[fingerprint(t, e, constrained)]
	if len(c) != 2 || c[0].Type != "agent_key_added" || c[1].Type != "agent_key_removed" {
		t.Fatalf("ssh-add -c -t 600, then ssh-add -d: %+v", c)
	}
	if !byAdd(c[0]) || c[0].Detail["confirm"] != "yes" || c[0].Detail["expires"] == "" || c[0].Detail["comment"] != "constrained" {
		t.Errorf("the add's event does not say who added the key and how: %+v", c[0])
	}
	if !byAdd(c[1]) || c[1].Reason != "removed" {
		t.Errorf("the removal's event: %+v", c[1])
	}
	s := byKey[fingerprint(t, e, short)]
	if len(s) != 2 || s[1].Type != "agent_key_removed" || s[1].Reason != "expired" || s[1].Approver != "" {
		t.Fatalf("ssh-add -t 1: %+v\nagent log:\n%s", s, a.Log())
	}

	// SIGUSR1 while the vault is locked: the added key goes, and is
	// recorded once the log can be written.
	e.MustRun("postern", "lock")
	a.cmd.Process.Signal(unix.SIGUSR1)
	a.WaitLog(t, "all keys wiped")
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Fatalf("an added key came back after SIGUSR1 and an unlock: %s", r)
	}
	w := events()[fingerprint(t, e, wiped)]
	if len(w) != 2 || w[1].Type != "agent_key_removed" || w[1].Reason != "revoked" {
		t.Fatalf("the key SIGUSR1 wiped: %+v", w)
	}
	if r := e.Run("postern", "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify: %s", r)
	}
}
