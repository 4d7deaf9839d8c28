package e2e

// The bastion, end to end: the real ssh, scp, sftp and rsync through
// "postern connect" (the ssh_config block "postern ssh-config" prints), the
// gateway's bastion, and a real sshd; the command journal read back with
// "postern journal".

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/internal/syncbuf"
)

type bastionWorld struct {
	*approvalWorld
	sshConfig string // an ssh_config file sending 127.0.0.1 through the bastion
}

// newBastionWorld starts a gateway with the bastion enabled, a vault key
// the sshd accepts, and writes the ssh_config block postern prints. The
// sshd is reached through the bastion as 127.0.0.1 and as localhost.
func newBastionWorld(t testing.TB, extra string, knownHosts ...string) *bastionWorld {
	return newBastionWorldSSHD(t, "", extra, knownHosts...)
}

// newBastionWorldSSHD is newBastionWorld with extra sshd_config lines.
func newBastionWorldSSHD(t testing.TB, sshdExtra, extra string, knownHosts ...string) *bastionWorld {
	return newBastionWorldOn(t, systemOpenSSH(t), sshdExtra, extra, knownHosts...)
}

// newBastionWorldOn is newBastionWorldSSHD with the sshd of o.
func newBastionWorldOn(t testing.TB, o OpenSSH, sshdExtra, extra string, knownHosts ...string) *bastionWorld {
	w := newApprovalWorldOn(t, o, sshdExtra, "")
	localhost := w.e.WriteFile("localhost_known_hosts", fmt.Sprintf("[localhost]:%d %s\n", w.sshd.Port, w.sshd.HostKey), 0o600)
	kh := append([]string{w.sshd.KnownHosts, localhost}, knownHosts...)
	quoted := make([]string, len(kh))
	for i, k := range kh {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	// The bastion starts with the gateway.
	w.agent.Stop()
	w.e.Config(fmt.Sprintf("approval = \"none\"\nknown_hosts = [%s]\n%s\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\", \"localhost\"]\n", strings.Join(quoted, ", "), extra))
	w.e.ForgetApproved(w.pass) // the bastion's settings are read at start
	w.agent = w.e.StartAgent()
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	block := w.e.MustRun("postern", "ssh-config").Stdout
	cfg := w.e.WriteFile("ssh_config", block+sshDefaults, 0o600)
	return &bastionWorld{approvalWorld: w, sshConfig: cfg}
}

// sshDefaults end the tests' ssh_config files: nothing asked, a bounded
// connect, and none of the identity files of the user who runs the
// tests, which ssh would otherwise read from the home the password
// database gives, whatever HOME says.
const sshDefaults = "\nHost *\n    BatchMode yes\n    ConnectTimeout 20\n    IdentityFile /dev/null\n"

// sshArgs are the arguments of ssh through the bastion to 127.0.0.1.
func (b *bastionWorld) sshArgs(port int, args ...string) []string {
	return b.sshArgsTo("127.0.0.1", port, args...)
}

// sshArgsTo are the arguments of ssh through the bastion to host.
func (b *bastionWorld) sshArgsTo(host string, port int, args ...string) []string {
	return append([]string{"-F", b.sshConfig, "-p", fmt.Sprint(port), b.sshd.User + "@" + host}, args...)
}

// ssh runs the client of the sshd's OpenSSH through the bastion.
func (b *bastionWorld) ssh(args ...string) Result {
	return b.e.Run(b.sshd.OpenSSH.SSH, b.sshArgs(b.sshd.Port, args...)...)
}

type entryJSON struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Kind    string `json:"kind"`
	Command string `json:"command_text"`
	Target  struct {
		HostKey string `json:"host_key"`
	} `json:"target"`
	RetryOf    string `json:"retry_of"`
	Dispatched string `json:"dispatched"`
	End        *struct {
		Outcome    string `json:"outcome"`
		ExitStatus int    `json:"exit_status"`
		Signal     string `json:"signal"`
		ClientGone bool   `json:"client_gone"`
		BytesOut   int64  `json:"bytes_out"`
	} `json:"end"`
	Unknown *struct {
		Reason string `json:"reason"`
	} `json:"unknown"`
	Resolutions []struct {
		Result     string `json:"result"`
		ExitStatus *int   `json:"exit_status"`
	} `json:"resolutions"`
}

func (b *bastionWorld) journal() []entryJSON {
	b.e.t.Helper()
	var es []entryJSON
	r := b.e.MustRun("postern", "journal", "list", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &es); err != nil {
		b.e.t.Fatalf("journal list --json: %v\n%s", err, r.Stdout)
	}
	return es
}

// entryFor returns the newest entry for command.
func (b *bastionWorld) entryFor(command string) entryJSON {
	b.e.t.Helper()
	for _, e := range b.journal() {
		if e.Command == command {
			return e
		}
	}
	b.e.t.Fatalf("no journal entry for %q", command)
	return entryJSON{}
}

func TestBastionExecStatusAndSignals(t *testing.T) {
	b := newBastionWorld(t, "")
	r := b.ssh("echo out; echo err >&2; exit 7")
	if r.Code != 7 || r.Stdout != "out\n" || !strings.Contains(r.Stderr, "err\n") {
		t.Fatalf("exit 7: %s", r)
	}
	e := b.entryFor("echo out; echo err >&2; exit 7")
	if e.Status != "COMPLETED" || e.End.Outcome != "exited" || e.End.ExitStatus != 7 || e.Target.HostKey != hostFingerprint(t, b.e, b.sshd) {
		t.Fatalf("journal: %+v %+v", e, e.End)
	}
	// A command killed by a signal: OpenSSH's client exits 255 (it ignores
	// exit-signal); the journal keeps the signal.
	r = b.ssh("kill -TERM $$")
	if r.Code != 255 {
		t.Fatalf("killed by TERM: %s", r)
	}
	if e := b.entryFor("kill -TERM $$"); e.End == nil || e.End.Outcome != "signaled" || e.End.Signal != "TERM" {
		t.Fatalf("journal of a signaled command: %+v", e)
	}
	// stdin EOF is a half-close: the command still writes after it.
	r = b.e.RunInput("line one\nline two\n", "ssh", b.sshArgs(b.sshd.Port, "cat; sleep 0.2; echo after-eof")...)
	if r.Code != 0 || r.Stdout != "line one\nline two\nafter-eof\n" {
		t.Fatalf("stdin half-close: %s", r)
	}
	// A lot of stderr is drained while stdout flows.
	r = b.ssh("head -c 3000000 /dev/zero >&2; echo done")
	if r.Code != 0 || r.Stdout != "done\n" || len(r.Stderr) < 3000000 {
		t.Fatalf("stderr drain: exit %d, %d bytes of stderr", r.Code, len(r.Stderr))
	}
}

func TestBastionFileTransfers(t *testing.T) {
	need(t, "scp", "sftp", "rsync")
	b := newBastionWorld(t, "")
	data := make([]byte, 1<<20+12345)
	rand.Read(data)
	src := b.e.WriteFile("payload.bin", string(data), 0o600)
	remote := filepath.Join(b.sshd.Dir, "remote")
	os.MkdirAll(remote, 0o700)
	port := fmt.Sprint(b.sshd.Port)
	target := b.sshd.User + "@127.0.0.1"

	// scp (the SFTP protocol in OpenSSH 9): up and down.
	b.e.MustRun("scp", "-F", b.sshConfig, "-P", port, src, target+":"+remote+"/scp.bin")
	b.e.MustRun("scp", "-F", b.sshConfig, "-P", port, target+":"+remote+"/scp.bin", b.e.Path("scp-back.bin"))
	// sftp in batch mode.
	batch := b.e.WriteFile("batch", fmt.Sprintf("put %s %s/sftp.bin\nget %s/sftp.bin %s\n", src, remote, remote, b.e.Path("sftp-back.bin")), 0o600)
	b.e.MustRun("sftp", "-F", b.sshConfig, "-P", port, "-b", batch, target)
	// rsync over ssh.
	rsh := fmt.Sprintf("ssh -F %s -p %s", b.sshConfig, port)
	b.e.MustRun("rsync", "-e", rsh, src, target+":"+remote+"/rsync.bin")
	b.e.MustRun("rsync", "-e", rsh, target+":"+remote+"/rsync.bin", b.e.Path("rsync-back.bin"))

	for _, f := range []string{remote + "/scp.bin", b.e.Path("scp-back.bin"), remote + "/sftp.bin", b.e.Path("sftp-back.bin"), remote + "/rsync.bin", b.e.Path("rsync-back.bin")} {
		if got := mustRead(t, f); !bytes.Equal(got, data) {
			t.Fatalf("%s differs from what was sent (%d bytes, want %d)", f, len(got), len(data))
		}
	}
	sub := 0
	for _, e := range b.journal() {
		if e.Kind == "subsystem" && e.Command == "sftp" && e.Status == "COMPLETED" {
			sub++
		}
	}
	if sub < 3 {
		t.Fatalf("the sftp subsystem sessions were not journaled (%d)", sub)
	}
}

func TestBastionChangedHostKeyRefused(t *testing.T) {
	need(t, "ssh", "sshd")
	// known_hosts names the server with another key.
	b := newBastionWorld(t, "")
	other := startSSHD(t, "")
	bad := b.e.WriteFile("bad_known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", b.sshd.Port, other.HostKey), 0o600)
	b.restartKnowing(bad)
	r := b.ssh("echo should-not-run")
	if r.Code == 0 || !strings.Contains(r.Stderr, "changed") || strings.Contains(r.Stdout, "should-not-run") {
		t.Fatalf("a changed host key was accepted: %s", r)
	}
	if e := b.entryFor("echo should-not-run"); e.End == nil || e.End.Outcome != "failed_to_start" || e.Status != "RETRY_SAFE previous_action_not_started" {
		t.Fatalf("journal: %+v", e)
	}
}

// cutter is a small TCP relay between the bastion and sshd that the test
// can cut, as a lost network would.
type cutter struct {
	l     net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, to string) *cutter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{l: l, to: to}
	t.Cleanup(func() { l.Close(); c.cut() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *cutter) port() int { return c.l.Addr().(*net.TCPAddr).Port }

// cut drops every connection made so far.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.conns {
		x.Close()
	}
	c.conns = nil
}

func TestBastionUpstreamLostIsUnknownAndResolvedByMarkers(t *testing.T) {
	upstreamLostResolvedByMarkers(t, newBastionWorld(t, ""))
}

// A session may send XDG_STATE_HOME, and an sshd may accept it: the
// markers stay under the login's HOME, where the probe looks, and the
// command that ran is found to have run — not "not started", which would
// let it run again.
func TestBastionMarkersIgnoreTheSessionsEnvironment(t *testing.T) {
	b := newBastionWorldSSHD(t, "AcceptEnv XDG_STATE_HOME", "")
	elsewhere := t.TempDir()
	upstreamLostResolvedByMarkers(t, b, "-o", "SetEnv=XDG_STATE_HOME="+elsewhere)
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("markers were written under the session's XDG_STATE_HOME: %v", entries)
	}
}

// upstreamLostResolvedByMarkers cuts a command's connection, refuses its
// retry and resolves it by its markers; sshOpts go to each ssh.
func upstreamLostResolvedByMarkers(t *testing.T, b *bastionWorld, sshOpts ...string) {
	relay := newCutter(t, fmt.Sprintf("127.0.0.1:%d", b.sshd.Port))
	kh := b.e.WriteFile("relay_known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s\n", relay.port(), b.sshd.HostKey), 0o600)
	b.agent.Stop()
	b.e.Config(fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\nmarkers = [\"127.0.0.1\"]\n", kh))
	b.e.ForgetApproved(b.pass) // the bastion's settings are read at start
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)

	done := filepath.Join(b.sshd.Dir, "done")
	command := "sleep 2; echo finished > " + done
	res := make(chan Result, 1)
	args := append(slices.Clone(sshOpts), b.sshArgs(relay.port(), command)...)
	go func() { res <- b.e.Run("ssh", args...) }()
	b.waitRunning(command)
	relay.cut()
	r := <-res
	if r.Code != 255 || !strings.Contains(r.Stderr, "UNKNOWN") {
		t.Fatalf("client after the cut: %s", r)
	}
	e := b.entryFor(command)
	if e.Status != "STATUS_UNKNOWN inspect_activity_journal" || e.Unknown == nil || e.Unknown.Reason != "upstream_lost" {
		t.Fatalf("journal after the cut: %+v", e)
	}
	// Without a pty, a quiet command survives the lost connection, and
	// its exit is marked under the login's HOME once it ends.
	waitFor(t, func() bool { _, err := os.Stat(done); return err == nil })
	exit := filepath.Join(b.sshd.Dir, "home/.local/state/postern/runs", e.ID, "exit")
	waitFor(t, func() bool { _, err := os.Stat(exit); return err == nil })
	// An identical retry asks a person, showing the earlier attempt; denied,
	// it is refused.
	b.denyRetry(e.ID, args)
	os.Remove(done)
	// resolve reads the remote markers over a fresh connection.
	out := b.e.MustRun("postern", "journal", "resolve", e.ID).Stdout
	if !strings.Contains(out, "COMPLETED") || !strings.Contains(out, "resolved  ran by probe (status 0)") {
		t.Fatalf("resolve:\n%s", out)
	}
	if _, err := os.Stat(done); err == nil {
		t.Fatal("resolving ran the command again")
	}
}

// waitRunning waits until the journal shows command dispatched and running.
func (b *bastionWorld) waitRunning(command string) {
	b.e.t.Helper()
	waitFor(b.e.t, func() bool {
		for _, e := range b.journal() {
			if e.Command == command && e.Status == "RUNNING" && e.Dispatched != "" && !strings.HasPrefix(e.Dispatched, "0001") {
				return true
			}
		}
		return false
	})
}

// denyRetry runs an identical retry of entry id, checks that it waits on a
// card showing the earlier attempt, denies it, and checks the refusal.
func (b *bastionWorld) denyRetry(id string, args []string) {
	t := b.e.t
	t.Helper()
	res := make(chan Result, 1)
	go func() { res <- b.e.Run("ssh", args...) }()
	c := b.e.WaitCard()
	if c.Reason != "retry_of_unknown" || c.Mode != "per-call" || !strings.Contains(c.Changed, id) {
		t.Fatalf("retry card: %+v", c)
	}
	b.e.MustRun("postern", "deny", c.ID)
	r := <-res
	if r.Code != 254 || !strings.Contains(r.Stderr, id) {
		t.Fatalf("denied retry: %s", r)
	}
	// The program whose retry was refused can learn why, in the seed's
	// words, with the journal entry to inspect.
	why := b.e.MustRun("postern", "why", "--json").Stdout
	var res2 struct {
		Last struct {
			Outcome string
			Journal string `json:"journal_entry"`
		}
	}
	if err := json.Unmarshal([]byte(why), &res2); err != nil || res2.Last.Outcome != "STATUS_UNKNOWN inspect_activity_journal" || res2.Last.Journal != id {
		t.Fatalf("postern why after the refused retry: %v\n%s", err, why)
	}
}

func TestBastionClientKilledRecordsRealExit(t *testing.T) {
	b := newBastionWorld(t, "")
	command := "sleep 3; echo late; exit 4"
	cmd := b.e.Command("ssh", b.sshArgs(b.sshd.Port, command)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.waitRunning(command)
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, func() bool {
		for _, e := range b.journal() {
			if e.Command == command && e.End != nil {
				return true
			}
		}
		return false
	})
	e := b.entryFor(command)
	if e.End.Outcome != "exited" || e.End.ExitStatus != 4 || !e.End.ClientGone {
		t.Fatalf("journal after the client died: %+v", e.End)
	}
}

// Without $XDG_RUNTIME_DIR the gateway puts the bastion's socket beside
// its agent socket, and the command line finds it there through
// $SSH_AUTH_SOCK: ssh-config prints it, and connect without --socket
// dials it.
func TestBastionWithoutRuntimeDir(t *testing.T) {
	b := newBastionWorld(t, "")
	b.agent.Stop()
	b.e.Unsetenv("XDG_RUNTIME_DIR")
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
	want := b.agent.Socket + ".bastion"
	if fi, err := os.Stat(want); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the gateway's bastion socket %s: %v", want, err)
	}
	block := b.e.MustRun("postern", "ssh-config").Stdout
	if !strings.Contains(block, " --socket '"+want+"' ") {
		t.Fatalf("ssh-config without $XDG_RUNTIME_DIR, want the socket %s:\n%s", want, block)
	}
	block = strings.Replace(block, " --socket '"+want+"'", "", 1)
	cfg := b.e.WriteFile("ssh_config_no_runtime_dir", block+sshDefaults, 0o600)
	r := b.e.Run("ssh", "-F", cfg, "-p", fmt.Sprint(b.sshd.Port), b.sshd.User+"@127.0.0.1", "echo through-the-bastion")
	if r.Code != 0 || r.Stdout != "through-the-bastion\n" {
		t.Fatalf("ssh through postern connect without --socket: %s", r)
	}
}

// killMidCommand runs a command through the bastion that appends a line
// to counter, kills the gateway (kill -9) while it runs and starts it
// again: the command's entry is unknown.
func (b *bastionWorld) killMidCommand(counter string) (command string, e entryJSON) {
	t := b.e.t
	t.Helper()
	command = "echo run >> " + counter + "; sleep 3"
	// -v: where it stands, should the command never begin.
	cmd := b.e.Command("ssh", append([]string{"-v"}, b.sshArgs(b.sshd.Port, command)...)...)
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(counter); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("ssh ended before the command began: %v\n%s\nagent log:\n%s\nsshd log:\n%s", cmd.ProcessState, out.String(), b.agent.Log(), b.sshd.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if i == 1500 {
			t.Fatalf("the command did not begin in 15s; ssh says:\n%s\nagent log:\n%s\nsshd log:\n%s", out.String(), b.agent.Log(), b.sshd.Log())
		}
	}
	b.agent.Kill()
	<-exited
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
	e = b.entryFor(command)
	if e.Status != "STATUS_UNKNOWN inspect_activity_journal" || e.Unknown == nil || e.Unknown.Reason != "bastion_restarted" {
		t.Fatalf("journal after kill -9: %+v", e)
	}
	return command, e
}

func TestBastionKilledMidCommandIsUnknownAndNotRetried(t *testing.T) {
	b := newBastionWorld(t, "")
	counter := filepath.Join(b.sshd.Dir, "runs")
	command, e := b.killMidCommand(counter)
	// An Ansible-style retry loop (retry while ssh exits 255) never runs
	// the command a second time.
	for i := 0; i < 3; i++ {
		b.denyRetry(e.ID, b.sshArgs(b.sshd.Port, command))
	}
	// Nor does the same host under another name: the guard goes by the
	// host key the bastion verified.
	b.denyRetry(e.ID, b.sshArgsTo("localhost", b.sshd.Port, command))
	// Nor the same account with a login style: sshd logs user:style in
	// as user.
	b.denyRetry(e.ID, []string{"-F", b.sshConfig, "-p", fmt.Sprint(b.sshd.Port), b.sshd.User + ":style@127.0.0.1", command})
	if n := strings.Count(string(mustRead(t, counter)), "run"); n != 1 {
		t.Fatalf("the command ran %d times", n)
	}
	// Resolved by hand, the command may run again.
	b.e.MustRun("postern", "journal", "resolve", e.ID, "--ran", "0", "--evidence", "checked the host")
	if r := b.ssh(command); r.Code != 0 {
		t.Fatalf("after resolving: %s", r)
	}
}

// A resolve probe the policy refuses is a denial like any other: exit
// status 254, and the entry stays unknown.
func TestBastionResolveProbeDeniedExits254(t *testing.T) {
	b := newBastionWorld(t, "")
	config := func(approval string) {
		b.e.Config(fmt.Sprintf("approval = %q\nknown_hosts = [%q]\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\nmarkers = [\"127.0.0.1\"]\n", approval, b.sshd.KnownHosts))
		b.agent.Stop()
		b.agent = b.e.StartAgent()
		b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
	}
	config("none")
	command, e := b.killMidCommand(filepath.Join(b.sshd.Dir, "runs"))
	config("deny")
	r := b.e.Run("postern", "journal", "resolve", e.ID)
	if r.Code != 254 || !strings.Contains(r.Stderr, "postern: error: ") || !strings.Contains(r.Stderr, "denied") {
		t.Fatalf("a denied probe: %s", r)
	}
	if after := b.entryFor(command); after.Status != e.Status || len(after.Resolutions) != 0 {
		t.Fatalf("after a denied probe the entry is %+v", after)
	}
}

// Invariant 8: resolving an entry by hand is an answer, recorded in the
// audit log together with the journal. With no gateway running there is
// nobody to record it: resolve refuses and changes nothing, rather than
// write the journal alone.
func TestBastionResolveWithoutGatewayKeepsTheAuditTrail(t *testing.T) {
	b := newBastionWorld(t, "")
	command, e := b.killMidCommand(filepath.Join(b.sshd.Dir, "runs"))
	b.agent.Stop()
	r := b.e.Run("postern", "journal", "resolve", e.ID, "--ran", "0", "--evidence", "checked the host")
	after := b.entryFor(command)
	recorded := false
	for _, ev := range b.auditEvents() {
		if ev.Type == "command_resolved" && ev.Detail["entry"] == e.ID {
			recorded = true
		}
	}
	if after.Status != e.Status && !recorded {
		t.Fatalf("the journal shows entry %s as %s, and the audit log has no command_resolved event for it (resolve: %s)", e.ID, after.Status, r)
	}
	if r.Code != 1 || !strings.Contains(r.Stderr, "postern: error: ") || !strings.Contains(r.Stderr, "start the gateway") {
		t.Fatalf("resolve without a gateway: %s", r)
	}
}

// An interactive shell with a terminal, driven through tmux: terminal
// size and its changes reach the remote shell, and the exit status
// comes back.
func TestBastionInteractiveShell(t *testing.T) {
	// sshd not running as root cannot hand a terminal to the group tty
	// and drops the connection.
	needRoot(t, "for the test sshd to give out terminals")
	b := newBastionWorld(t, "")
	sshLine := "ssh -t " + strings.Join(b.sshArgs(b.sshd.Port), " ")
	env := "env -i " + strings.Join(b.e.Environ(), " ") + " TERM=xterm PS1='remote$ '"
	term := startTmux(t, b.e, 120, 40, env+" "+sshLine+"; echo ssh-exit-$?; sleep 30")
	tmux, screen := term.run, term.screen
	tmux("send-keys", "stty size; echo ok-$((40+2))", "Enter")
	waitScreen := func(want string) {
		t.Helper()
		for i := 0; i < 1500 && !strings.Contains(screen(), want); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if s := screen(); !strings.Contains(s, want) {
			t.Fatalf("the terminal never showed %q:\n%s", want, s)
		}
	}
	waitScreen("ok-42")
	if s := screen(); !strings.Contains(s, "40 120") {
		t.Fatalf("remote terminal size:\n%s", s)
	}
	tmux("resize-window", "-x", "100", "-y", "30")
	// The new size goes from tmux to ssh (SIGWINCH), to the bastion and
	// on to sshd, none of it in step with the keys typed next: ask the
	// remote shell until it has it, for as long as 10 seconds.
	for i := 0; ; i++ {
		tmux("send-keys", fmt.Sprintf("stty size; echo ok-$((%d+2))", 50+i), "Enter")
		waitScreen(fmt.Sprintf("ok-%d", 52+i))
		if strings.Contains(screen(), "30 100") {
			break
		}
		if i == 40 {
			t.Fatalf("window change not relayed:\n%s", screen())
		}
		time.Sleep(250 * time.Millisecond)
	}
	tmux("send-keys", "exit 3", "Enter")
	waitScreen("ssh-exit-3")
	found := false
	for _, e := range b.journal() {
		if e.Kind == "shell" && e.End != nil && e.End.ExitStatus == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("the shell session was not journaled with its status: %+v", b.journal())
	}
}

// exit-signal is relayed verbatim (OpenSSH's client ignores it; Go's and
// Python's clients read it): a Go client through the bastion's socket sees
// the signal, and the bastion's host certificate for the name it asked for.
func TestBastionRelaysExitSignal(t *testing.T) {
	b := newBastionWorld(t, "")
	client := b.bastionClient(t)
	s, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	err = s.Run("kill -USR1 $$")
	var ee *ssh.ExitError
	if !errors.As(err, &ee) || ee.Signal() != "USR1" {
		t.Fatalf("exit of a signaled command: %v", err)
	}
	s2, _ := client.NewSession()
	if err := s2.Run("exit 0"); err != nil {
		t.Fatalf("a second command on the same connection: %v", err)
	}
}

// Fifty commands at once through the bastion: every one journaled with
// its own status. (Each is its own command: an identical command still
// running would need a person.)
func TestBastionConcurrent50(t *testing.T) {
	b := newBastionWorld(t, "")
	var wg sync.WaitGroup
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.ssh(fmt.Sprintf("exit %d # command %d", i%7, i)).Code
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != i%7 {
			t.Fatalf("command %d exited %d", i, c)
		}
	}
	n := 0
	for _, e := range b.journal() {
		if strings.HasPrefix(e.Command, "exit ") && e.Status == "COMPLETED" && e.End.Outcome == "exited" {
			n++
		}
	}
	if n != 50 {
		t.Fatalf("%d of 50 commands journaled as completed", n)
	}
}
