package e2e

// End-to-end tests of "postern agent" as a drop-in ssh-agent, driven by the
// real OpenSSH ssh-add, ssh-keygen, ssh and git against a real sshd.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"

	"github.com/postern/postern/gateway/api"
)

func fingerprint(t testing.TB, e *Env, key string) string {
	t.Helper()
	out := e.MustRun("ssh-keygen", "-l", "-f", key+".pub").Stdout
	return strings.Fields(out)[1]
}

func pubKey(t testing.TB, key string) string {
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	return f[0] + " " + f[1]
}

// allKeyTypes are the key types OpenSSH 9 clients use with an agent.
var allKeyTypes = []struct {
	name, typ string
	bits      int
}{
	{"ed25519", "ed25519", 0},
	{"ecdsa256", "ecdsa", 256},
	{"ecdsa384", "ecdsa", 384},
	{"ecdsa521", "ecdsa", 521},
	{"rsa3072", "rsa", 3072},
}

func TestSSHAddListSignLogin(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgent()
	var keys []string
	var authorized strings.Builder
	for _, k := range allKeyTypes {
		p := e.Keygen(k.name, k.typ, k.bits, "")
		keys = append(keys, p)
		authorized.WriteString(pubKey(t, p) + "\n")
		e.AddKey(p)
	}
	// -l: fingerprints as ssh-keygen computes them; -L: the public keys.
	l := e.MustRun("ssh-add", "-l").Stdout
	L := e.MustRun("ssh-add", "-L").Stdout
	for _, k := range keys {
		if !strings.Contains(l, fingerprint(t, e, k)) {
			t.Errorf("ssh-add -l lacks %s:\n%s", k, l)
		}
		if !strings.Contains(L, pubKey(t, k)) {
			t.Errorf("ssh-add -L lacks %s:\n%s", k, L)
		}
	}
	sshd := startSSHD(t, authorized.String())
	msg := e.WriteFile("msg.txt", "signed by the agent\n", 0o600)
	e.WriteFile("allowed_signers", "", 0o600)
	for _, k := range keys {
		// Commit-style signing through the agent, checked by ssh-keygen.
		e.MustRun("ssh-keygen", "-Y", "sign", "-n", "git", "-f", k+".pub", msg)
		signers := e.WriteFile("allowed_signers", "me "+pubKey(t, k)+"\n", 0o600)
		sig, _ := os.ReadFile(msg + ".sig")
		r := e.RunInput(string(mustRead(t, msg)), "ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me", "-n", "git", "-s", msg+".sig")
		if r.Code != 0 {
			t.Fatalf("verify %s: %s\n%s", k, r, sig)
		}
		os.Remove(msg + ".sig")
		// Log in with exactly this key, held only by the agent.
		out := e.MustRun("ssh", sshd.SSHArgs("-o", "IdentitiesOnly=yes", "-o", "IdentityFile="+k+".pub", sshd.Target(), "echo", "logged-in")...)
		if strings.TrimSpace(out.Stdout) != "logged-in" {
			t.Fatalf("ssh with %s: %s", k, out)
		}
	}
	// Every login was bound to the server's verified host key.
	hostFP := hostFingerprint(t, e, sshd)
	if n := strings.Count(a.Log(), "dest="+hostFP); n != len(keys) {
		t.Errorf("%d signatures carried the verified destination %s, want %d:\n%s", n, hostFP, len(keys), a.Log())
	}
	// -d removes one key, -D all.
	e.MustRun("ssh-add", "-d", keys[0]+".pub")
	if l := e.MustRun("ssh-add", "-l").Stdout; strings.Contains(l, fingerprint(t, e, keys[0])) {
		t.Fatalf("key still listed after -d:\n%s", l)
	}
	e.MustRun("ssh-add", "-D")
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Fatalf("after -D: %s", r)
	}
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hostFingerprint(t testing.TB, e *Env, s *SSHD) string {
	p := e.WriteFile("hostkey.pub", s.HostKey+"\n", 0o600)
	return strings.Fields(e.MustRun("ssh-keygen", "-l", "-f", p).Stdout)[1]
}

// TestLifetimes: a key lives as long as ssh-add -t said, or the agent's
// -t. A listing checks that no key outlived its lifetime, and that each
// it wants is there where the machine kept pace: a stall of a couple of
// seconds (a busy machine) can end a lifetime before the listing.
func TestLifetimes(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	type key struct {
		name       string
		life       time.Duration
		added, end time.Time // the lifetime began between them
	}
	byDefault, own := &key{name: "default-life", life: 5 * time.Second}, &key{name: "own-life", life: 2 * time.Second}
	e.StartAgent("-t", fmt.Sprint(byDefault.life.Seconds()))
	for _, k := range []*key{byDefault, own} {
		f := e.Keygen(k.name, "ed25519", 0, "")
		k.added = time.Now()
		if k == own {
			e.AddKey(f, "-t", fmt.Sprint(k.life.Seconds()))
		} else {
			e.AddKey(f)
		}
		k.end = time.Now().Add(k.life)
	}
	list := func(at string, want ...*key) {
		t.Helper()
		asked := time.Now()
		r := e.Run("ssh-add", "-l")
		for _, k := range []*key{byDefault, own} {
			switch has := strings.Contains(r.Stdout, k.name); {
			case has && asked.After(k.end):
				t.Errorf("%s: %s listed past its lifetime:\n%s", at, k.name, r)
			case !has && slices.Contains(want, k) && time.Since(k.added) < k.life:
				t.Errorf("%s: %s gone before its lifetime ended:\n%s", at, k.name, r)
			case !has && slices.Contains(want, k):
				t.Logf("%s: the machine stalled past %s's lifetime, so its presence is not checked", at, k.name)
			}
		}
	}
	list("after the adds", byDefault, own)
	time.Sleep(time.Until(own.added.Add(own.life / 2)))
	list("halfway through the key's own lifetime", byDefault, own)
	const margin = 500 * time.Millisecond
	time.Sleep(time.Until(own.end.Add(margin)))
	list("past the key's own lifetime", byDefault)
	time.Sleep(time.Until(byDefault.end.Add(margin)))
	if r := e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("past the agent's lifetime: %s", r)
	}
}

// agentWithKey starts an agent that signs without asking
// (approval = "none") and holds one Ed25519 key, k (its path).
func agentWithKey(t *testing.T) (e *Env, a *Agent, k string) {
	t.Helper()
	need(t, "ssh-add", "ssh-keygen")
	e = newEnv(t)
	e.Config(`approval = "none"`)
	a = e.StartAgent()
	k = e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	return e, a, k
}

func TestLockUnlockWithoutVault(t *testing.T) {
	e, a, k := agentWithKey(t)
	if r := e.RunInput("hunter2\nhunter2\n", "ssh-add", "-x"); r.Code != 0 {
		t.Fatalf("lock: %s", r)
	}
	if r := e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("locked agent listed keys: %s", r)
	}
	msg := e.WriteFile("m", "x", 0o600)
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatal("locked agent signed")
	}
	start := time.Now()
	if r := e.RunInput("wrong\n", "ssh-add", "-X"); r.Code == 0 {
		t.Fatal("unlocked with the wrong password")
	}
	if time.Since(start) < 500*time.Millisecond {
		t.Errorf("a wrong password was answered without a delay (%v)", time.Since(start))
	}
	if r := e.RunInput("hunter2\n", "ssh-add", "-X"); r.Code != 0 {
		t.Fatalf("unlock: %s", r)
	}
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	st := e.MustRun("postern", "status", "--json").Stdout
	if !strings.Contains(st, `"epoch": 2`) || !strings.Contains(st, `"state": "none"`) {
		t.Fatalf("status after lock and unlock:\n%s\n%s", st, a.Log())
	}
}

// Without a vault, postern lock gives no password: ssh-add -X, which
// any program that reaches the agent socket can send, must not lift it
// with whatever it types, nor may postern unlock from inside a run; the
// person's postern unlock does. A lock with ssh-add -x
// and an empty password is lifted by that empty password only, as with
// ssh-agent.
func TestLockWithoutPasswordIsLiftedByThePersonOnly(t *testing.T) {
	e, agent, _ := agentWithKey(t)
	e.MustRun("postern", "lock")
	if r := e.RunInput("anything\n", "ssh-add", "-X"); r.Code == 0 {
		t.Fatal("ssh-add -X with any password lifted the lock of postern lock")
	}
	if r := e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("the agent is not locked: %s", r)
	}
	// With no password, where the command stands is the only sign that
	// it is the person: a run's postern unlock is refused.
	pass := e.WriteFile("any", "anything\n", 0o600)
	run := e.StartRunWith("coder", "--no-sandbox")
	r := run.Do("postern unlock --passphrase-file " + pass + " --socket " + agent.Socket)
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "refused") { // the run's one output
		t.Fatalf("a run's postern unlock of the lock of postern lock: %s", r)
	}
	if r := e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("the agent is not locked after a run's postern unlock: %s", r)
	}
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	e.MustRun("ssh-add", "-l")

	if r := e.RunInput("\n\n", "ssh-add", "-x"); r.Code != 0 {
		t.Fatalf("lock with an empty password: %s", r)
	}
	if r := e.RunInput("anything\n", "ssh-add", "-X"); r.Code == 0 {
		t.Fatal("ssh-add -X with another password lifted a lock with an empty one")
	}
	if r := e.RunInput("\n", "ssh-add", "-X"); r.Code != 0 {
		t.Fatalf("unlock with the empty password: %s", r)
	}
	e.MustRun("ssh-add", "-l")
}

// askpassStub installs an SSH_ASKPASS program that records every prompt
// (with SSH_ASKPASS_PROMPT) in a log and says yes only while the file
// "allow" exists, as a person does who read the card first (after
// askpassRead); asked for a word, it types what the file holds.
func askpassStub(e *Env) (log, allow string) {
	log, allow = e.Path("askpass.log"), e.Path("allow")
	prog := e.WriteFile("askpass", fmt.Sprintf(`#!/bin/sh
printf '%%s\n%%s\n--\n' "$SSH_ASKPASS_PROMPT" "$1" >> %s
test -e %s || exit 1
sleep %s
[ "$SSH_ASKPASS_PROMPT" = confirm ] || cat %s
`, log, allow, askpassRead, allow), 0o755)
	e.Setenv("SSH_ASKPASS", prog)
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	return log, allow
}

// askpassRead is how long an askpass stub that says yes waits first (in
// sleep's words): the gateway does not take a yes that comes before a
// person could read the card.
const askpassRead = "0.6"

func TestConfirmNamesProcessAndDestination(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	log, allow := askpassStub(e)
	a := e.StartAgent()
	k := e.Keygen("confirmed", "ed25519", 0, "")
	e.AddKey(k, "-c")
	msg := e.WriteFile("m", "x", 0o600)

	// No: nothing is signed.
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatal("signed without confirmation")
	}
	prompt := string(mustRead(t, log))
	for _, want := range []string{"confirm\n", "Allow, this one time, ssh-keygen (pid", fingerprint(t, e, k) + ` ("confirmed")`, "Requested by: ssh-keygen (", `namespace "file"`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	// Yes: signed.
	os.WriteFile(allow, nil, 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)

	// A login shows the verified destination: the server's host key, its
	// name in the host inventory, and what known_hosts calls it.
	sshd := startSSHD(t, pubKey(t, k)+"\n", "prod-db-1")
	a.Reconfigure(t, fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n", sshd.KnownHosts))
	e.MustRun("postern", "hosts", "import", "prod-db-1")
	// A per-call login is approved by the destination's name typed out,
	// as on the consoles: a plain yes (or a wrong name) is a no.
	login := func() Result {
		return e.Run("ssh", sshd.SSHArgs("-o", "HostKeyAlias=prod-db-1", sshd.Target(), "true")...)
	}
	for _, typed := range []string{"", "prod-db-2", "prod-db-1 "} {
		os.WriteFile(allow, []byte(typed), 0o600)
		os.Remove(log)
		if r := login(); r.Code == 0 {
			t.Fatalf("a login was approved by askpass answering %q", typed)
		}
		if p := string(mustRead(t, log)); !strings.HasPrefix(p, "\n") || !strings.Contains(p, `Type "prod-db-1" to approve this one use; anything else denies it.`) {
			t.Fatalf("the login was not asked as a name to type:\n%s", p)
		}
	}
	os.WriteFile(allow, []byte("prod-db-1\n"), 0o600)
	os.Remove(log)
	if r := login(); r.Code != 0 {
		t.Fatalf("login with the name typed: %s\n%s", r, a.Log())
	}
	prompt = string(mustRead(t, log))
	want := "Destination: host key " + hostFingerprint(t, e, sshd) + ", verified by session-bind; host inventory: prod-db-1\n"
	if !strings.Contains(prompt, want) || !strings.Contains(prompt, "known_hosts (a file any program of yours can edit) calls it: [127.0.0.1]:") || !strings.Contains(prompt, "Requested by: ssh (") {
		t.Errorf("login prompt lacks the verified destination %q:\n%s", want, prompt)
	}
}

func TestApprovalModes(t *testing.T) {
	mostlyWaits(t)
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	log, allow := askpassStub(e)
	e.Config(`approval = "deny"`)
	a := e.StartAgent()
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	msg := e.WriteFile("m", "x", 0o600)
	os.WriteFile(allow, nil, 0o600)
	sign := func() Result { return e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg) }
	if r := sign(); r.Code == 0 {
		t.Fatal(`approval = "deny" signed`)
	}
	if _, err := os.Stat(log); err == nil {
		t.Fatal(`approval = "deny" asked a person`)
	}
	for _, mode := range []string{"per-call", "session"} {
		e.Config(fmt.Sprintf("approval = %q", mode))
		a.ApprovePolicy(t) // each mode is looser than the one before
		a.WaitLog(t, "approval="+mode)
		os.Remove(log)
		for i := 0; i < 2; i++ {
			os.Remove(msg + ".sig")
			if r := sign(); r.Code != 0 {
				t.Fatalf("%s: %s", mode, r)
			}
		}
		if n := strings.Count(string(mustRead(t, log)), "--\n"); n != 2 {
			t.Errorf("%s: asked %d times for 2 signatures", mode, n)
		}
	}
	// An invalid configuration keeps the policy in force and says so.
	e.Config(`approval = "sometimes"`)
	a.WaitLog(t, "configuration not reloaded")
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "approval: session") || !strings.Contains(st, "sometimes") {
		t.Fatalf("status after an invalid reload:\n%s", st)
	}
}

func TestRestrictDestination(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	k := e.Keygen("restricted", "ed25519", 0, "")
	allowed := startSSHD(t, pubKey(t, k)+"\n", "allowed-host")
	other := startSSHD(t, pubKey(t, k)+"\n", "other-host")
	hostkeys := e.WriteFile("hostkeys", "allowed-host "+allowed.HostKey+"\nother-host "+other.HostKey+"\n", 0o600)
	e.AddKey(k, "-H", hostkeys, "-h", "allowed-host")
	ok := e.Run("ssh", allowed.SSHArgs("-o", "HostKeyAlias=allowed-host", allowed.Target(), "echo", "ok")...)
	if ok.Code != 0 || strings.TrimSpace(ok.Stdout) != "ok" {
		t.Fatalf("login to the permitted host: %s", ok)
	}
	no := e.Run("ssh", other.SSHArgs("-o", "HostKeyAlias=other-host", other.Target(), "echo", "ok")...)
	if no.Code == 0 {
		t.Fatalf("restricted key logged in to another host: %s", no)
	}
}

func TestGitCloneOverSSH(t *testing.T) {
	need(t, "git", "ssh-add", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	k := e.Keygen("git", "ed25519", 0, "")
	e.AddKey(k)
	sshd := startSSHD(t, pubKey(t, k)+"\n")
	repo := filepath.Join(sshd.Dir, "repo.git")
	src := e.Path("src")
	e.MustRun("git", "init", "-q", "-b", "main", src)
	e.WriteFile("src/README", "hello over ssh\n", 0o644)
	e.MustRun("git", "-C", src, "add", "README")
	e.MustRun("git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
	e.MustRun("git", "clone", "-q", "--bare", src, repo)
	e.Setenv("GIT_SSH_COMMAND", "ssh "+strings.Join(sshd.SSHArgs(), " "))
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", sshd.User, sshd.Port, repo)
	e.MustRun("git", "clone", "-q", url, e.Path("clone"))
	if b := mustRead(t, e.Path("clone", "README")); string(b) != "hello over ssh\n" {
		t.Fatalf("cloned README = %q", b)
	}
}

// TestOtherUserRefused: a process of another user that reaches any of the
// gateway's sockets (agent, control, bastion) is refused by the gateway's
// own per-connection check, and the refusal is logged with the socket's
// name; root is let in, as with ssh-agent. Each client is the real one
// for its socket: ssh-add, postern status, postern connect.
func TestOtherUserRefused(t *testing.T) {
	need(t, "setpriv", "ssh-add")
	needRoot(t, "to run a client as another user")
	e := newEnv(t)
	// Open the file system fence on purpose, so that only the gateway's
	// own per-connection uid check stands between the other user and the
	// sockets.
	dir := filepath.Join(e.Dir, "open")
	os.MkdirAll(dir, 0o711)
	os.Chmod(dir, 0o711) // whatever the umask
	os.Chmod(e.Dir, 0o711)
	bastionSock := filepath.Join(dir, "bastion.sock")
	e.Config(fmt.Sprintf("approval = \"none\"\n[bastion]\nenabled = true\nsocket = %q\nhosts = [\"127.0.0.1\"]\n", bastionSock))
	a := e.startAgentAt(filepath.Join(dir, "agent.sock"))
	controlSock := api.ControlSocket(a.Socket)
	for _, s := range []string{a.Socket, controlSock, bastionSock} {
		if err := os.Chmod(s, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	home := filepath.Join(e.Dir, "nobody")
	os.Mkdir(home, 0o700)
	os.Chown(home, 65534, 65534)
	asNobody := func(args ...string) Result {
		t.Helper()
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_STATE_HOME=" + home,
			"XDG_CONFIG_HOME=" + home, "XDG_RUNTIME_DIR=" + home, "SSH_AUTH_SOCK=" + a.Socket}
		return e.finish(cmd, "")
	}
	refused := func(socket string) {
		t.Helper()
		a.WaitLog(t, fmt.Sprintf(`msg="refusing connection from another user" socket=%s uid=65534`, socket))
	}

	if r := asNobody("ssh-add", "-l"); r.Code == 0 || strings.Contains(r.Stdout, "SHA256:") {
		t.Fatalf("another user listed the keys: %s", r)
	}
	refused("agent")
	if r := asNobody(posternBin, "status", "--json"); r.Code == 0 || strings.Contains(r.Stdout, "boot") {
		t.Fatalf("another user read the gateway's status: %s", r)
	}
	refused("control")
	if r := asNobody(posternBin, "connect", "--socket", bastionSock, "git", "127.0.0.1", "22"); r.Code == 0 {
		t.Fatalf("another user was let through the bastion: %s", r)
	}
	refused("bastion")

	// Root is allowed, as with ssh-agent.
	e.MustRun("ssh-add", "-l")
	e.MustRun("postern", "status")
	if n := strings.Count(a.Log(), "refusing connection"); n != 3 {
		t.Fatalf("%d refusals logged, want 3:\n%s", n, a.Log())
	}
}

func TestAgentIsNonDumpable(t *testing.T) {
	need(t, "setpriv")
	needRoot(t, "to run the agent and a peer as an unprivileged user")
	e := newEnv(t)
	dir := e.Path("nobody")
	for _, d := range []string{"", "home", "state", "config", "run"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
		os.Chown(filepath.Join(dir, d), 65534, 65534)
	}
	os.Chmod(e.Dir, 0o711)
	asNobody := func(args ...string) *exec.Cmd {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir + "/home", "XDG_STATE_HOME=" + dir + "/state",
			"XDG_CONFIG_HOME=" + dir + "/config", "XDG_RUNTIME_DIR=" + dir + "/run"}
		return cmd
	}
	sock := filepath.Join(dir, "run", "agent.sock")
	agentCmd := asNobody(posternBin, "agent", "-D", "-a", sock)
	if err := agentCmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { agentCmd.Process.Kill(); agentCmd.Wait() }()
	waitSocket(t, sock)
	// An ordinary process of that user can be read by its peers...
	ctl := asNobody("sh", "-c", "cat /proc/$$/environ >/dev/null")
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("control: a process cannot read its own environ: %v %s", err, out)
	}
	// ...the agent cannot: it is non-dumpable, so /proc/PID/{environ,mem}
	// belong to root.
	for _, f := range []string{"environ", "mem"} {
		out, err := asNobody("cat", fmt.Sprintf("/proc/%d/%s", agentCmd.Process.Pid, f)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("a same-user process read the agent's /proc/PID/%s: %v %s", f, err, out)
		}
	}
}

func TestExecOnSamePidIsANewProcess(t *testing.T) {
	e, a, _ := agentWithKey(t)
	// The helper connects and lists keys, then execs a copy of itself (a
	// different executable file) that keeps the connection and asks again.
	copyBin := e.Path("helper-copy")
	self, _ := os.Executable()
	if out, err := exec.Command("cp", self, copyBin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	cmd := e.Command(self)
	cmd.Env = append(cmd.Env, "POSTERN_E2E_HELPER=exec", "POSTERN_E2E_EXEC="+copyBin)
	r := e.finish(cmd, "")
	if !strings.Contains(r.Stdout, "before-exec keys=1") || !strings.Contains(r.Stdout, "after-exec refused") {
		t.Fatalf("helper: %s", r)
	}
	a.WaitLog(t, "the peer is no longer the process that connected")
}

// execHelper runs in the test binary started by
// TestExecOnSamePidIsANewProcess (see TestMain).
func execHelper(mode string) {
	switch mode {
	case "driver":
		driverMain()
	case "xclient":
		xclientMain()
	case "signbench":
		signBench()
	case "signclient":
		signClientMain()
	case "relay":
		relayMain()
	case "echo":
		echoMain()
	case "hold":
		holdMain()
	case "gohop":
		goHopMain()
	case "exec":
		c, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		keys, err := agent.NewClient(c).List()
		fmt.Printf("before-exec keys=%d err=%v\n", len(keys), err)
		f, _ := c.(*net.UnixConn).File()
		unix.FcntlInt(f.Fd(), unix.F_SETFD, 0)
		os.Setenv("POSTERN_E2E_HELPER", "after")
		env := append(os.Environ(), fmt.Sprintf("POSTERN_E2E_FD=%d", f.Fd()))
		prog := os.Getenv("POSTERN_E2E_EXEC")
		err = unix.Exec(prog, []string{prog}, env)
		fmt.Println("exec:", err)
		os.Exit(1)
	case "after":
		fd, _ := strconv.Atoi(os.Getenv("POSTERN_E2E_FD"))
		c, err := net.FileConn(os.NewFile(uintptr(fd), "agent"))
		if err != nil {
			fmt.Println("fileconn:", err)
			os.Exit(1)
		}
		if keys, err := agent.NewClient(c).List(); err != nil {
			fmt.Println("after-exec refused:", err)
		} else {
			fmt.Printf("after-exec keys=%d\n", len(keys))
		}
		os.Exit(0)
	}
}

// TestSIGUSR1WipesKeys: as OpenSSH 10's ssh-agent, SIGUSR1 removes every
// key.
func TestSIGUSR1WipesKeys(t *testing.T) {
	e, a, _ := agentWithKey(t)
	if r := e.Run("ssh-add", "-l"); r.Code != 0 {
		t.Fatalf("key not added: %s", r)
	}
	a.cmd.Process.Signal(unix.SIGUSR1)
	a.WaitLog(t, "all keys wiped")
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Fatalf("after SIGUSR1: %s", r)
	}
}
