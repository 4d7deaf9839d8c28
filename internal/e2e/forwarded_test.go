package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// A host the person's ssh -A logged in to reaches the agent through the
// forwarded socket: it may ask for signatures, each decided here, and no
// more of the gateway.

// forwardedTo returns a function that runs a command, with stdin, on the
// host of w's sshd, logged in to with a key file of its own and the agent
// only forwarded (ssh -A). ssh runs in a terminal session of its own, as
// an agent's does: the test answers its cards from another one.
func forwardedTo(t *testing.T, w *approvalWorld) func(stdin string, command ...string) Result {
	login := w.e.Keygen("login", "ed25519", 0, "")
	f, err := os.OpenFile(filepath.Join(w.sshd.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(pubKey(t, login) + "\n")
	f.Close()
	return func(stdin string, command ...string) Result {
		t.Helper()
		cmd := w.e.Command("ssh", w.sshd.SSHArgs(append([]string{"-A", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=" + login,
			w.sshd.Target()}, command...)...)...)
		cmd.SysProcAttr.Setsid = true
		return w.e.finish(cmd, stdin)
	}
}

// The host is not told what the gateway decided for the person's
// programs (why@postern), neither their hosts nor their signatures'
// namespaces.
func TestForwardedAgentIsNotToldWhy(t *testing.T) {
	need(t, "ssh", "ssh-keygen", "sshd")
	w := newApprovalWorld(t, "")
	e := w.e
	// A signature the person refused, in a namespace of their own.
	msg := e.WriteFile("msg.txt", "private\n", 0o600)
	sign := e.Command("ssh-keygen", "-Y", "sign", "-n", "payroll-release", "-f", w.key+".pub", msg)
	if err := sign.Start(); err != nil {
		t.Fatal(err)
	}
	e.MustRun("postern", "deny", e.WaitCard().ID)
	sign.Wait()
	if out := e.MustRun("postern", "why", "--json").Stdout; !strings.Contains(out, "payroll-release") {
		t.Fatalf("the person's own why does not name the signature's namespace:\n%s", out)
	}

	r := forwardedTo(t, w)("", posternBin, "why", "--json")
	if strings.Contains(r.Stdout+r.Stderr, "payroll-release") {
		t.Fatalf("the host the agent was forwarded to was told what the gateway decided for the person's programs:\n%s", r)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "forwarded") {
		t.Fatalf("postern why through a forwarded agent: want a refusal that says the connection is forwarded:\n%s", r)
	}
}

// The host neither unlocks the vault (ssh-add -X takes the vault's
// passphrase: a host would guess it, or lift the person's lock) nor
// locks the person out (ssh-add -x).
func TestForwardedAgentNeitherUnlocksNorLocks(t *testing.T) {
	need(t, "ssh", "ssh-add", "sshd")
	w := newApprovalWorld(t, "")
	e := w.e
	remote := forwardedTo(t, w)
	vaultState := func() string {
		t.Helper()
		st := e.MustRun("postern", "status", "--json").Stdout
		for _, s := range []string{"locked", "unlocked"} {
			if strings.Contains(st, `"state": "`+s+`"`) {
				return s
			}
		}
		t.Fatalf("no vault state in:\n%s", st)
		return ""
	}
	e.MustRun("postern", "lock")
	if r := remote("vault pass\n", "ssh-add", "-X"); r.Code == 0 || vaultState() != "locked" {
		t.Fatalf("ssh-add -X through the forwarded agent unlocked the vault (%s): %s", vaultState(), r)
	}
	e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	if r := remote("pw\npw\n", "ssh-add", "-x"); r.Code == 0 || vaultState() != "unlocked" {
		t.Fatalf("ssh-add -x through the forwarded agent locked the vault (%s): %s", vaultState(), r)
	}
	if !strings.Contains(w.agent.Log(), "refusing to lock or unlock the agent through ssh") {
		t.Fatalf("the log does not say why:\n%s", w.agent.Log())
	}
}

// goHopMain logs in, as a client written with x/crypto/ssh does (it sends
// no session-bind), to the host POSTERN_E2E_HOP (host:port) as
// POSTERN_E2E_HOP_USER, whose key is POSTERN_E2E_HOP_HOSTKEY, with the
// keys of the agent at $SSH_AUTH_SOCK, and runs echo there.
func goHopMain() {
	fail := func(what string, err error) {
		fmt.Printf("%s: %v\n", what, err)
		os.Exit(1)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("POSTERN_E2E_HOP_HOSTKEY")))
	if err != nil {
		fail("host key", err)
	}
	c, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		fail("agent", err)
	}
	cfg := &ssh.ClientConfig{
		User:            os.Getenv("POSTERN_E2E_HOP_USER"),
		Auth:            []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(c).Signers)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         20 * time.Second,
	}
	conn, err := ssh.Dial("tcp", os.Getenv("POSTERN_E2E_HOP"), cfg)
	if err != nil {
		fail("login", err)
	}
	s, err := conn.NewSession()
	if err != nil {
		fail("session", err)
	}
	out, err := s.Output("echo hopped")
	if err != nil {
		fail("echo", err)
	}
	fmt.Print(string(out))
}

// On a host the agent is forwarded to, a client that sends no
// session-bind (OpenSSH before 8.9, as on many a bastion, or a client
// of x/crypto/ssh, paramiko, libssh) logs in to a further host with the
// person's key: its request, for another session than the one the
// forwarding was bound to, is put to the person on a card that says the
// destination is not verified and a remote host asks, as ssh-agent
// signs it, instead of being refused with no card.
func TestForwardedHopWithoutSessionBind(t *testing.T) {
	need(t, "ssh", "sshd")
	w := newApprovalWorld(t, "")
	e := w.e
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	remote := forwardedTo(t, w)
	done := make(chan Result, 1)
	go func() {
		done <- remote("", "env", "POSTERN_E2E_HELPER=gohop",
			fmt.Sprintf("POSTERN_E2E_HOP=127.0.0.1:%d", w.sshd.Port),
			"POSTERN_E2E_HOP_USER="+w.sshd.User,
			fmt.Sprintf("POSTERN_E2E_HOP_HOSTKEY='%s'", w.sshd.HostKey), self)
	}()
	var card cardJSON
	for card.ID == "" {
		select {
		case r := <-done:
			t.Fatalf("the hop ended with no card:\n%s\n%s", r, w.agent.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if cs := e.cards(); len(cs) > 0 {
			card = cs[0]
		}
	}
	show := e.MustRun("postern", "approve", "--list").Stdout
	if card.Destination != nil || !strings.Contains(show, "forwarded agent connection") {
		t.Fatalf("the card of a hop without session-bind: %+v\n%s", card.Destination, show)
	}
	w.approve(card.ID, "--once")
	if r := <-done; r.Code != 0 || !strings.Contains(r.Stdout, "hopped") {
		t.Fatalf("the hop after its approval: %s", r)
	}
}

// A key the host adds to the agent, or removes, through the forwarded
// socket is recorded as a change that came through a forwarded agent
// connection, not as one the person's ssh made.
func TestForwardedKeyChangesAreRecordedAsForwarded(t *testing.T) {
	need(t, "ssh", "ssh-add", "ssh-keygen", "sshd")
	w := newApprovalWorld(t, "")
	remote := forwardedTo(t, w)
	key := w.e.Keygen("remote-added", "ed25519", 0, "")
	if r := remote("", "ssh-add", key); r.Code != 0 {
		t.Fatalf("ssh-add through the forwarded agent: %s", r)
	}
	if r := remote("", "ssh-add", "-d", key+".pub"); r.Code != 0 {
		t.Fatalf("ssh-add -d through the forwarded agent: %s", r)
	}
	var changes []keyEvent
	for _, ev := range auditEvents(t, w.e, w.pass) {
		if ev.Key == fingerprint(t, w.e, key) {
			changes = append(changes, ev)
		}
	}
	if len(changes) != 2 || !changes[0].Forwarding || !changes[1].Forwarding {
		t.Fatalf("the changes a forwarded agent connection made are not recorded as forwarded: %+v", changes)
	}
	if out := w.e.MustRun("postern", "activity").Stdout; !strings.Contains(out, "agent_key_added") || strings.Count(out, "forwarding=yes") < 2 {
		t.Fatalf("the timeline does not say the changes came through a forwarded connection:\n%s", out)
	}
}

// The host adds keys at a pace, as a run does: each add is a durable
// record, and a host that added keys in a loop through the forwarded
// socket would fill the disk with the audit log (and a log that cannot
// be written refuses the person's signatures too).
func TestForwardedAddsArePaced(t *testing.T) {
	need(t, "ssh", "ssh-add", "ssh-keygen", "sshd")
	w := newApprovalWorld(t, "")
	key := w.e.Keygen("looped", "ed25519", 0, "")
	r := forwardedTo(t, w)("", "sh", "-c", "'ok=0; for i in $(seq 200); do ssh-add -q "+key+" 2>/dev/null && ok=$((ok+1)); done; echo added $ok'")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "added ") {
		t.Fatalf("the host's loop: %s", r)
	}
	if strings.TrimSpace(r.Stdout) == "added 200" {
		t.Fatalf("a host the agent is forwarded to added a key 200 times in a row, each recorded: %s", r.Stdout)
	}
	w.agent.WaitLog(t, "refusing to add keys")
}

// With upstream_changes = "forward", the host changes the upstream
// agent's keys no more than a run does: its ssh-add -D, in a loop,
// neither wipes the keys the person keeps there nor writes a record of
// each wipe.
func TestForwardedHostLeavesTheUpstreamAgentAlone(t *testing.T) {
	need(t, "ssh", "ssh-add", "ssh-agent", "ssh-keygen", "sshd")
	e := newEnv(t)
	up := startUpstreamAgent(t, e)
	kept := e.Keygen("kept-upstream", "ed25519", 0, "")
	if r := up.run(e, "ssh-add", kept); r.Code != 0 {
		t.Fatalf("ssh-add to the upstream agent: %s", r)
	}
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	w := &approvalWorld{e: e, pass: pass, sshd: startSSHD(t, "")}
	e.Config(fmt.Sprintf("approval = \"none\"\nupstream = %q\nupstream_changes = \"forward\"\n", up.Socket))
	w.agent = e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	r := forwardedTo(t, w)("", "sh", "-c", "'for i in $(seq 20); do ssh-add -D; done'")
	if l := up.run(e, "ssh-add", "-l").Stdout; !strings.Contains(l, fingerprint(t, e, kept)) {
		t.Fatalf("the host wiped the upstream agent's keys through the forwarded socket (%s):\n%s", r, l)
	}
	wipes := 0
	for _, ev := range auditEvents(t, e, pass) {
		if ev.Type == "agent_key_removed" && ev.Detail["key_holder"] == "upstream" {
			wipes++
		}
	}
	if wipes != 0 {
		t.Fatalf("%d records of the upstream's keys removed through the forwarded socket", wipes)
	}
}

// The keys a host the agent is forwarded to adds are listed after the
// person's, whenever the person's came: ssh offers keys in the order
// listed and sshd ends a login after a few refused (MaxAuthTries), so
// keys the host put first would keep the person's logins out.
func TestForwardedHostsKeysAreListedAfterThePersons(t *testing.T) {
	need(t, "ssh", "ssh-add", "ssh-keygen", "sshd")
	w := newApprovalWorld(t, "")
	theirs := w.e.Keygen("theirs", "ed25519", 0, "")
	if r := forwardedTo(t, w)("", "ssh-add", "-q", theirs); r.Code != 0 {
		t.Fatalf("the host's ssh-add: %s", r)
	}
	mine := w.e.Keygen("mine", "ed25519", 0, "")
	w.e.MustRun("ssh-add", "-q", mine)
	l := w.e.MustRun("ssh-add", "-l").Stdout
	i, j := strings.Index(l, fingerprint(t, w.e, mine)), strings.Index(l, fingerprint(t, w.e, theirs))
	if i < 0 || j < 0 || i > j {
		t.Fatalf("the person's key is not listed before the one the forwarded host added:\n%s", l)
	}
}
