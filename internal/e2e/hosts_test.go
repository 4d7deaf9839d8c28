package e2e

// The host inventory names hosts; a destination without a name — never
// proved (no session-bind), or not in the inventory — is the strictest
// case.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// inventoryWorld is an approval world with two hosts: git-host and
// prod-db-1, in one known_hosts file hashed as Debian hashes it, and a
// policy that asks for every use on production hosts.
type inventoryWorld struct {
	*approvalWorld
	prod *SSHD
	kh   string
}

func newInventoryWorld(t *testing.T) *inventoryWorld {
	need(t, "ssh-keygen")
	w := newApprovalWorld(t, "", "git-host")
	prod := startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	e := w.e
	kh := e.WriteFile("home/.ssh/known_hosts", string(mustRead(t, w.sshd.KnownHosts))+string(mustRead(t, prod.KnownHosts)), 0o600)
	e.MustRun("ssh-keygen", "-q", "-H", "-f", kh)
	if strings.Contains(string(mustRead(t, kh)), "prod-db-1") {
		t.Fatal("known_hosts is not hashed")
	}
	w.agent.Reconfigure(t, fmt.Sprintf("known_hosts = [%q]\n[[rule]]\nclass = \"production\"\napproval = \"per-call\"\n", kh))
	return &inventoryWorld{approvalWorld: w, prod: prod, kh: kh}
}

// ssh logs in to s by its address, checking its key in the hashed file.
func (w *inventoryWorld) ssh(s *SSHD) string {
	return strings.ReplaceAll(sshCmd(s), s.KnownHosts, w.kh)
}

func TestInventoryNamesProductionHosts(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	// Hashed entries are found by the names the person gives.
	if r := e.MustRun("postern", "hosts", "import", "git-host"); !strings.Contains(r.Stdout, "git-host  class -") || !strings.Contains(r.Stdout, "(hashed entry)") {
		t.Fatalf("import: %s", r)
	}
	r := e.MustRun("postern", "hosts", "add", "prod-db-1", "--class", "production")
	prodFP := hostFingerprint(t, e, w.prod)
	if !strings.Contains(r.Stdout, "prod-db-1  class production") || !strings.Contains(r.Stdout, prodFP) || !strings.Contains(r.Stderr, "against the host's own key") {
		t.Fatalf("add: %s", r)
	}
	var hosts []struct {
		Name  string `json:"name"`
		Class string `json:"class"`
		Keys  []struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(e.MustRun("postern", "hosts", "list", "--json").Stdout), &hosts); err != nil || len(hosts) != 2 || hosts[1].Name != "prod-db-1" || hosts[1].Class != "production" || hosts[1].Keys[0].Fingerprint != prodFP {
		t.Fatalf("hosts list --json: %v %+v", err, hosts)
	}

	a := e.StartRun("coder")
	job := a.Start(w.ssh(w.sshd))
	c := e.WaitCard()
	if c.Mode != "session" || c.Destination == nil || !contains(c.Destination.Names, "git-host") {
		t.Fatalf("git-host card: %+v", c)
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "git-host", job.Wait())
	mustSucceed(t, "git-host in the session", a.Do(w.ssh(w.sshd)))
	e.NoCard()

	// Production, reached by its address through a hashed known_hosts:
	// named by the inventory, asked every time.
	for i := 0; i < 2; i++ {
		job := a.Start(w.ssh(w.prod))
		c := e.WaitCard()
		if c.Mode != "per-call" || c.Destination == nil || !contains(c.Destination.Names, "prod-db-1") {
			t.Fatalf("production card %d: %+v", i, c)
		}
		if i == 0 {
			w.approve(c.ID, "--once")
			mustSucceed(t, "prod, approved once", job.Wait())
		} else {
			e.MustRun("postern", "deny", c.ID)
			if r := job.Wait(); r.Code == 0 {
				t.Fatal("prod rode the session")
			}
		}
	}
	// A confined run cannot make known_hosts forget prod (the file is
	// read-only inside it); a program outside the run that does changes
	// nothing either: the inventory still names it.
	forget := fmt.Sprintf("ssh-keygen -R '[127.0.0.1]:%d' -f %s && ssh-keygen -R prod-db-1 -f %s", w.prod.Port, w.kh, w.kh)
	if r := a.Do(forget); r.Code == 0 {
		t.Fatalf("the confined run edited known_hosts: %s", r)
	}
	e.MustRun("sh", "-c", forget)
	job = a.Start(strings.ReplaceAll(w.ssh(w.prod), "StrictHostKeyChecking=yes", "StrictHostKeyChecking=no"))
	if c := e.WaitCard(); c.Mode != "per-call" || !contains(c.Destination.Names, "prod-db-1") {
		t.Fatalf("prod after ssh-keygen -R: %+v", c)
	}
	e.MustRun("postern", "deny", e.WaitCard().ID)
	job.Wait()

	// The inventory is an approver's: a confined run cannot reach the
	// gateway's control socket, and an unconfined run is refused by the
	// process tree.
	pub := e.WriteFile("prod-host.pub", w.prod.HostKey+"\n", 0o644)
	u := e.StartRunWith("unconfined", "--no-sandbox")
	for _, cmd := range []string{
		"postern hosts remove prod-db-1 --socket " + w.agent.Socket,
		fmt.Sprintf("postern hosts add staging-web --key-file %s --socket %s", pub, w.agent.Socket),
	} {
		if r := a.Do(cmd); r.Code == 0 || !strings.Contains(r.Stdout, "no gateway at") {
			t.Fatalf("%s from inside the confined run: %s", cmd, r)
		}
		if r := u.Do(cmd); r.Code != 254 || !strings.Contains(r.Stdout, "refused") {
			t.Fatalf("%s from inside the unconfined run: %s", cmd, r)
		}
	}
	// Each change is in the audit log, with who made it.
	act := e.MustRun("postern", "activity", "--passphrase-file", w.pass).Stdout
	if !strings.Contains(act, "host_added") || !strings.Contains(act, "host=prod-db-1") || !strings.Contains(act, "class=production") {
		t.Fatalf("activity lacks the inventory change:\n%s", act)
	}
	// Removing a host: its key has no name again.
	e.MustRun("postern", "hosts", "remove", "git-host")
	job = a.Start(w.ssh(w.sshd))
	c = e.WaitCard()
	if c.Mode != "per-call" || len(c.Destination.Names) != 0 {
		t.Fatalf("git-host after its removal: %+v", c)
	}
	e.MustRun("postern", "deny", c.ID)
	job.Wait()
}

// A client that never sends session-bind (x/crypto/ssh, as paramiko and
// libssh) gives the agent no destination: UNKNOWN, asked about every time
// while a per-call host rule exists, inside an approved session too.
func TestLoginWithoutSessionBindIsUnknown(t *testing.T) {
	w := newInventoryWorld(t)
	e := w.e
	e.MustRun("postern", "hosts", "import", "git-host")
	e.MustRun("postern", "hosts", "add", "prod-db-1", "--class", "production")
	a := e.StartRun("coder")
	job := a.Start(w.ssh(w.sshd))
	w.approve(e.WaitCard().ID, "--session")
	mustSucceed(t, "git-host", job.Wait())
	before := w.accepted()

	var c struct {
		ID      string `json:"id"`
		Mode    string `json:"mode"`
		Unknown string `json:"destination_unknown"`
		Dest    any    `json:"destination"`
	}
	readCard := func() {
		t.Helper()
		id := e.WaitCard().ID
		var cs []json.RawMessage
		json.Unmarshal([]byte(e.MustRun("postern", "approve", "--list", "--json").Stdout), &cs)
		for _, raw := range cs {
			json.Unmarshal(raw, &c)
			if c.ID == id {
				return
			}
		}
		t.Fatal("card went away")
	}
	job = a.Start(xclientCmd(w.prod))
	readCard()
	if c.Mode != "per-call" || !strings.Contains(c.Unknown, "did not prove where it connects") || c.Dest != nil {
		t.Fatalf("a login without session-bind: %+v", c)
	}
	text := e.MustRun("postern", "approve", "--list").Stdout
	if !strings.Contains(text, "for an UNKNOWN destination?") || !strings.Contains(text, "Destination: UNKNOWN: the client did not prove where it connects") {
		t.Fatalf("the card on a terminal:\n%s", text)
	}
	e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 || strings.Contains(w.prod.Log(), "Accepted publickey") {
		t.Fatalf("a login without session-bind rode the session: %s", r)
	}
	// The honest path: approved once, it logs in.
	job = a.Start(xclientCmd(w.sshd))
	readCard()
	if c.Mode != "per-call" || c.Unknown == "" {
		t.Fatalf("the second login without session-bind: %+v", c)
	}
	w.approve(c.ID, "--once")
	if r := job.Wait(); r.Code != 0 || !strings.Contains(r.Stdout, "xclient: logged in") {
		t.Fatalf("approved once: %s", r)
	}
	if w.accepted() != before+1 {
		t.Fatalf("%d logins, want %d", w.accepted(), before+1)
	}
	// Real ssh to the named development host still rides the session.
	mustSucceed(t, "git-host", a.Do(w.ssh(w.sshd)))
	e.NoCard()
}
