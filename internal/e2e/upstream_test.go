package e2e

// An upstream agent gated by postern: OpenSSH's own ssh-agent holds the
// keys, "postern agent --upstream" lists them beside its own, asks about
// every use as its policy says, records it, and only then has the
// upstream sign. The upstream's own confirmation (ssh-add -c on it) still
// happens, after postern's card.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// upstreamAgent is OpenSSH's ssh-agent in debug mode, whose SSH_ASKPASS
// records every confirmation it asks for and allows it.
type upstreamAgent struct {
	Socket string
	AskLog string // one line per confirmation the upstream asked for
	mu     sync.Mutex
	log    strings.Builder
}

func startUpstreamAgent(t *testing.T, e *Env) *upstreamAgent {
	t.Helper()
	return startUpstreamAgentAt(t, e, e.Path("run", "upstream.sock"))
}

// startUpstreamAgentAt is startUpstreamAgent with its socket at sock.
func startUpstreamAgentAt(t *testing.T, e *Env, sock string) *upstreamAgent {
	t.Helper()
	u := &upstreamAgent{Socket: sock, AskLog: e.Path("upstream-asked.log")}
	ask := e.WriteFile("upstream-askpass", fmt.Sprintf("#!/bin/sh\nprintf '%%s|%%s\\n' \"$SSH_ASKPASS_PROMPT\" \"$1\" | tr '\\n' ' ' >> %s\necho >> %s\n", u.AskLog, u.AskLog), 0o755)
	cmd := exec.Command("ssh-agent", "-d", "-a", u.Socket)
	cmd.Env = append(e.Environ(), "SSH_ASKPASS="+ask, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:postern-test")
	cmd.Stderr = &lockedWriter{mu: &u.mu, w: &u.log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitSocket(t, u.Socket)
	return u
}

// signRequests counts the sign requests the upstream agent received.
func (u *upstreamAgent) signRequests() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Count(u.log.String(), " type 13")
}

// asked returns what the upstream's askpass was asked so far.
func (u *upstreamAgent) asked() string {
	b, _ := os.ReadFile(u.AskLog)
	return string(b)
}

// run runs a command against the upstream agent directly.
func (u *upstreamAgent) run(e *Env, name string, args ...string) Result {
	e.t.Helper()
	cmd := e.Command(name, args...)
	cmd.Env = append(cmd.Env, "SSH_AUTH_SOCK="+u.Socket)
	return e.finish(cmd, "")
}

func TestUpstreamAgentGated(t *testing.T) {
	need(t, "ssh-agent", "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	up := startUpstreamAgent(t, e)

	plain := e.Keygen("up-plain", "ed25519", 0, "")
	confirmed := e.Keygen("up-confirmed", "ecdsa", 256, "")
	own := e.Keygen("own", "ed25519", 0, "")
	for _, add := range [][]string{{plain}, {"-c", confirmed}} {
		if r := up.run(e, "ssh-add", add...); r.Code != 0 {
			t.Fatalf("ssh-add %q to the upstream: %s", add, r)
		}
		os.Remove(add[len(add)-1])
	}
	sshd := startSSHD(t, pubKey(t, plain)+"\n"+pubKey(t, confirmed)+"\n"+pubKey(t, own)+"\n")
	e.Config(fmt.Sprintf("approval = \"per-call\"\nknown_hosts = [%q]\n", sshd.KnownHosts))
	cards, allow := askpassStub(e)
	a := e.StartAgent("--upstream", up.Socket)
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	e.AddKey(own)

	// Listed beside postern's own key.
	l := e.MustRun("ssh-add", "-l").Stdout
	for _, k := range []string{plain, confirmed, own} {
		if !strings.Contains(l, fingerprint(t, e, k)) {
			t.Fatalf("ssh-add -l through postern lacks %s:\n%s", k, l)
		}
	}
	login := func(key string) Result {
		return e.Run("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+key+".pub", sshd.Target(), "echo", "upstream-login")...)
	}

	// Denied on postern's card: the upstream is never asked to sign.
	if r := login(plain); r.Code == 0 {
		t.Fatalf("logged in with an upstream key although the card was denied: %s", r)
	}
	card := string(mustRead(t, cards))
	for _, want := range []string{fingerprint(t, e, plain) + ` ("up-plain")`, "Held by the upstream agent at " + up.Socket + ":", "Destination: host key " + hostFingerprint(t, e, sshd)} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	if n := up.signRequests(); n != 0 {
		t.Fatalf("the upstream agent got %d sign requests for a denied use", n)
	}

	// Approved (a per-call login to a host the inventory does not name:
	// the word is "unknown"): the upstream signs, and the login works.
	os.WriteFile(allow, []byte("unknown"), 0o600)
	if r := login(plain); r.Code != 0 || strings.TrimSpace(r.Stdout) != "upstream-login" {
		t.Fatalf("login with an approved upstream key: %s\ncards:\n%s\nagent log:\n%s", r, mustRead(t, cards), a.Log())
	}
	if up.signRequests() == 0 {
		t.Fatal("the upstream agent never signed")
	}
	msg := e.WriteFile("m", "x", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", plain+".pub", msg)
	signers := e.WriteFile("allowed_signers", "me "+pubKey(t, plain)+"\n", 0o600)
	if r := e.RunInput("x", "ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me", "-n", "file", "-s", msg+".sig"); r.Code != 0 {
		t.Fatalf("verify a signature the upstream made: %s", r)
	}

	// ssh-add -c on the upstream: postern's card first, then the
	// upstream's own confirmation, which its askpass records.
	if up.asked() != "" {
		t.Fatalf("the upstream asked for a confirmation before any use of its confirmed key: %q", up.asked())
	}
	if r := login(confirmed); r.Code != 0 {
		t.Fatalf("login with the upstream's confirmed key: %s\nagent log:\n%s", r, a.Log())
	}
	asked := up.asked()
	if !strings.Contains(asked, "confirm|") || !strings.Contains(asked, fingerprint(t, e, confirmed)) {
		t.Fatalf("the upstream's own confirmation did not happen: %q", asked)
	}
	// Denied by postern: the upstream's confirmation is not asked again.
	os.Remove(allow)
	if r := login(confirmed); r.Code == 0 {
		t.Fatal("logged in although postern's card was denied")
	}
	if got := up.asked(); got != asked {
		t.Fatalf("the upstream asked for a confirmation of a use postern denied: %q", got)
	}

	// Locked, postern lists and signs nothing, upstream keys included.
	e.MustRun("postern", "lock")
	if r := e.Run("ssh-add", "-l"); strings.Contains(r.Stdout, fingerprint(t, e, plain)) {
		t.Fatalf("a locked postern lists the upstream's keys:\n%s", r.Stdout)
	}
	e.MustRun("postern", "unlock", "--passphrase-file", pass)

	// upstream_changes = "refuse" (the default): the upstream's keys
	// cannot be removed through postern, and -D leaves them.
	if r := e.Run("ssh-add", "-d", plain+".pub"); r.Code == 0 {
		t.Fatalf("removed an upstream key through postern: %s", r)
	}
	e.MustRun("ssh-add", "-D")
	if l := up.run(e, "ssh-add", "-l").Stdout; !strings.Contains(l, fingerprint(t, e, plain)) || !strings.Contains(l, fingerprint(t, e, confirmed)) {
		t.Fatalf("the upstream lost keys through postern:\n%s", l)
	}

	// Every use is in the audit log, as a key the upstream holds: the
	// approved ones as sign, the denied ones as denied.
	out := e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass).Stdout
	var signs, denied int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type   string            `json:"type"`
			Key    string            `json:"key"`
			Detail map[string]string `json:"detail"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit show line %q: %v", line, err)
		}
		if ev.Key != fingerprint(t, e, plain) && ev.Key != fingerprint(t, e, confirmed) {
			continue
		}
		if ev.Detail["key_holder"] != "upstream" {
			t.Errorf("event %s for an upstream key without key_holder=upstream: %s", ev.Type, line)
		}
		switch ev.Type {
		case "sign":
			signs++
		case "action_denied":
			denied++
		}
	}
	if signs != 3 || denied != 2 {
		t.Fatalf("audit log: %d sign and %d action_denied events for upstream keys, want 3 and 2:\n%s", signs, denied, out)
	}
}

// upstream_changes = "forward": ssh-add through postern adds to and
// removes from the upstream agent, constraints included.
func TestUpstreamAgentForwardsChanges(t *testing.T) {
	need(t, "ssh-agent", "ssh-add", "ssh-keygen")
	e := newEnv(t)
	up := startUpstreamAgent(t, e)
	e.Config(fmt.Sprintf("approval = \"none\"\nupstream = %q\nupstream_changes = \"forward\"\n", up.Socket))
	e.StartAgent()
	k := e.Keygen("forwarded", "ed25519", 0, "")
	e.AddKey(k, "-c")
	fp := fingerprint(t, e, k)
	if l := up.run(e, "ssh-add", "-l").Stdout; !strings.Contains(l, fp) {
		t.Fatalf("the key added through postern is not in the upstream agent:\n%s", l)
	}
	// The confirm constraint went with it: the upstream asks.
	msg := e.WriteFile("m", "x", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	if !strings.Contains(up.asked(), fp) {
		t.Fatalf("the upstream did not confirm the use of a key added with -c: %q", up.asked())
	}
	e.MustRun("ssh-add", "-d", k+".pub")
	if l := up.run(e, "ssh-add", "-l"); strings.Contains(l.Stdout, fp) {
		t.Fatalf("the key removed through postern is still in the upstream agent:\n%s", l.Stdout)
	}
}

// A confined run reaches the upstream's keys through its own socket, and
// so through postern's card, not around it: the upstream's socket, in a
// directory of its own in the home directory as 1Password's is, is
// hidden from the run with that directory. The home directory is shown
// to the run, read-only, as it is outside the tests (here it is under
// /tmp, which runs do not see, and which would hide the socket whatever
// postern does).
func TestConfinedRunCannotReachUpstream(t *testing.T) {
	need(t, "ssh-agent", "ssh-add", "ssh-keygen")
	const upstream = "upstream = \"~/.1password/agent.sock\"\n"
	w := newConfinedWorld(t, upstream)
	showReadOnly(w, upstream+fmt.Sprintf("known_hosts = [%q]\n", w.sshd.KnownHosts), w.e.Home())
	dir := w.e.Home(".1password")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	up := startUpstreamAgentAt(t, w.e, filepath.Join(dir, "agent.sock"))
	key := w.e.Keygen("up-key", "ed25519", 0, "")
	if r := up.run(w.e, "ssh-add", key); r.Code != 0 {
		t.Fatalf("ssh-add to the upstream: %s", r)
	}
	os.Remove(key)

	a := w.e.StartRun("coder")
	mustBeRefused(t, a, []escape{
		{"ssh-add -l on the upstream's socket", "SSH_AUTH_SOCK=" + up.Socket + " ssh-add -l"},
		{"the upstream's socket by its path", "test -e " + up.Socket},
		{"the upstream's directory", "ls -A " + dir + " | grep -q ."},
	})
	if n := up.signRequests(); n != 0 {
		t.Fatalf("the upstream got %d sign requests before any card", n)
	}

	// Through the run's own socket the key is there, and signs once the
	// person outside approves.
	msg := w.e.WriteFile("msg", "x", 0o644)
	job := a.Start(fmt.Sprintf("ssh-keygen -Y sign -n file -f %s.pub %s", key, msg))
	c := w.e.WaitCard()
	w.approve(c.ID, "--session")
	mustSucceed(t, "signing with the upstream's key through postern", job.Wait())
	if up.signRequests() == 0 {
		t.Fatal("the upstream never signed")
	}
}
