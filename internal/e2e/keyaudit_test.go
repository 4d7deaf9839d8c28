package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startAudited starts a gateway with approval = "none" and its vault
// unlocked, the audit log on, and returns it and the vault's passphrase
// file.
func startAudited(t *testing.T, e *Env) (*Agent, string) {
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "audited\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	return a, pass
}

// auditEvents reads the audit log's events, as postern audit show --json
// gives them.
func auditEvents(t *testing.T, e *Env, pass string) []keyEvent {
	var evs []keyEvent
	out := e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass).Stdout
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev keyEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit show line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// keyEvent is what the tests read of an event.
type keyEvent struct {
	Type       string            `json:"type"`
	Key        string            `json:"key"`
	Reason     string            `json:"reason"`
	Approver   string            `json:"approver"`
	Forwarding bool              `json:"forwarding"`
	Detail     map[string]string `json:"detail"`
}

// TestAgentKeyChangesAudited: what ssh-add does to the agent's keys, and
// what the agent drops on its own, is in the audit log: who added a key
// and with which constraints, who removed it, which lifetime ended, what
// SIGUSR1 wiped. SIGUSR1 wipes the added keys while the vault is locked
// too: they do not come back at the next unlock.
func TestAgentKeyChangesAudited(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	a, pass := startAudited(t, e)

	constrained := e.Keygen("constrained", "ed25519", 0, "")
	short := e.Keygen("short", "ed25519", 0, "")
	wiped := e.Keygen("wiped", "ecdsa", 0, "")
	e.MustRun("ssh-add", "-c", "-t", "600", constrained)
	e.MustRun("ssh-add", "-d", constrained+".pub")
	e.AddKey(short, "-t", "1")
	e.AddKey(wiped)

	events := func() map[string][]keyEvent {
		byKey := map[string][]keyEvent{}
		for _, ev := range auditEvents(t, e, pass) {
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

// A run that floods the agent with requests it is refused cannot fill
// the disk with the audit log (a log that cannot be written refuses the
// person's signatures too): past a burst its refusals are counted, and
// the count is in the log, every refusal accounted for.
func TestRefusalFloodIsCounted(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	_, pass := startAudited(t, e)
	junk := e.Keygen("not-held", "ed25519", 0, "")
	d := e.StartRun("coder")
	const n = 300
	start := time.Now()
	d.Do(fmt.Sprintf("for i in $(seq %d); do ssh-add -T %s.pub 2>/dev/null; done; true", n, junk))
	// Recorded one by one: a burst of 64, then 8 a second for as long as
	// the loop took, and the record of the last ones counted once the
	// flood ends (approvals' refusalBurst and refusalRate).
	allowed := 64 + int(8*time.Since(start).Seconds()) + 1
	fp := fingerprint(t, e, junk)
	var recorded, counted int
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		recorded, counted = 0, 0
		for _, ev := range auditEvents(t, e, pass) {
			if ev.Type == "action_denied" && ev.Key == fp {
				recorded++
				if s := ev.Detail["suppressed"]; s != "" {
					k, _ := strconv.Atoi(s)
					counted += k
				}
			}
		}
		if recorded+counted >= n {
			break
		}
	}
	if recorded+counted != n || recorded > allowed {
		t.Fatalf("%d refusals: %d recorded (at most %d in that time), %d counted", n, recorded, allowed, counted)
	}
}
