package e2e

// Socket activation: systemd-socket-activate, a real launcher from
// systemd, waits for the first connection on the agent socket and only
// then starts postern agent with it (LISTEN_FDS, LISTEN_PID,
// LISTEN_FDNAMES), as a systemd socket unit does.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/procid"
)

// startLauncher runs systemd-socket-activate with the test's environment
// and args before the agent's command line. With passed, the launcher
// receives that listening socket as a service manager's (as systemd hands
// it on, made by a socket unit) and waits on it; otherwise args name the
// socket it makes (-l).
func startLauncher(t *testing.T, e *Env, passed *os.File, args []string, agentArgs ...string) *Agent {
	t.Helper()
	line := []string{"systemd-socket-activate"}
	for _, kv := range e.Environ() {
		line = append(line, "-E", kv)
	}
	line = append(line, args...)
	line = append(line, posternBin, "agent", "-d")
	line = append(line, agentArgs...)
	var cmd *exec.Cmd
	if passed != nil {
		// LISTEN_PID must name the launcher: the shell execs it.
		cmd = e.Command("sh", append([]string{"-c", `LISTEN_FDS=1 LISTEN_PID=$$ exec "$@"`, "sh"}, line...)...)
		cmd.ExtraFiles = []*os.File{passed}
	} else {
		cmd = e.Command(line[0], line[1:]...)
	}
	l := &Agent{env: e, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &l.mu, w: &l.log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			cmd.Process.Kill()
			<-l.done
		}
	})
	// Listening before the first client comes.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(l.Log(), "Listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("systemd-socket-activate did not listen:\n%s", l.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return l
}

// wait waits for the activated agent to exit and returns its exit
// status.
func (l *Agent) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the activated agent did not exit:\n%s", l.Log())
	}
	return l.cmd.ProcessState.ExitCode()
}

// unitSocket makes the agent socket as contrib/systemd/user/postern.socket
// has systemd make it: DirectoryMode=0700, SocketMode=0600,
// PassCredentials=yes. It returns the listening socket as a file to pass.
func unitSocket(t *testing.T, path string) *os.File {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	if err := procid.PassCredentials(l); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	t.Cleanup(func() { f.Close() })
	return f
}

func TestSocketActivation(t *testing.T) {
	need(t, "systemd-socket-activate", "ssh-add", "ssh-keygen", "setpriv")
	needRoot(t, "to run a client as another user")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	sock := e.Path("run", "postern", "agent.sock")
	passed := unitSocket(t, sock)
	l := startLauncher(t, e, passed, []string{"--fdname=agent"})
	e.Setenv("SSH_AUTH_SOCK", sock)
	k := e.Keygen("k", "ed25519", 0, "")

	// The first connection starts the agent, and is served.
	e.AddKey(k)
	if !strings.Contains(l.Log(), "Execing") {
		t.Fatalf("the launcher did not start the agent:\n%s", l.Log())
	}
	if out := e.MustRun("ssh-add", "-l").Stdout; !strings.Contains(out, fingerprint(t, e, k)) {
		t.Fatalf("ssh-add -l after activation:\n%s", out)
	}
	// The gateway serves the socket it was given (the launcher's pid:
	// it execs the agent) and its control socket beside it. It serves
	// the agent socket before it says it started.
	l.WaitLog(t, `msg="gateway started"`)
	if !strings.Contains(l.Log(), "socket="+sock) {
		t.Fatalf("agent log:\n%s", l.Log())
	}
	if strings.Contains(l.Log(), "does not pass credentials") {
		t.Fatalf("a socket made with PassCredentials=yes was reported without:\n%s", l.Log())
	}
	e.MustRun("postern", "status")
	if fi, err := os.Stat(api.ControlSocket(sock)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v %v", fi, err)
	}

	// Another user is refused by the per-connection check, with the
	// file system fences opened on purpose.
	os.Chmod(e.Dir, 0o711)
	os.Chmod(filepath.Dir(e.Path("run", "postern")), 0o711)
	os.Chmod(e.Path("run", "postern"), 0o711)
	os.Chmod(sock, 0o666)
	home := e.Path("nobody")
	os.Mkdir(home, 0o700)
	os.Chown(home, 65534, 65534)
	other := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "ssh-add", "-l")
	other.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SSH_AUTH_SOCK=" + sock}
	if r := e.finish(other, ""); r.Code == 0 || strings.Contains(r.Stdout, "SHA256:") {
		t.Fatalf("another user listed the keys: %s", r)
	}
	l.WaitLog(t, `msg="refusing connection from another user" socket=agent uid=65534`)
	os.Chmod(sock, 0o600)
	os.Chmod(e.Path("run", "postern"), 0o700)

	// SIGTERM: the agent exits 0, as ssh-agent does under socket
	// activation, removes its control socket and leaves the socket to the
	// manager that made it.
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(t); code != 0 {
		t.Fatalf("exit status %d after SIGTERM:\n%s", code, l.Log())
	}
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the agent removed the manager's socket: %v", err)
	}
	if _, err := os.Lstat(api.ControlSocket(sock)); err == nil {
		t.Fatal("the control socket was left behind")
	}

	// The manager starts it again on the next connection, on the same
	// socket. The command line, finding the well-known socket without a
	// gateway's control socket beside it, connects to start one.
	l2 := startLauncher(t, e, passed, nil)
	e.Unsetenv("SSH_AUTH_SOCK")
	if r := e.Run("postern", "status"); r.Code != 0 || !strings.Contains(r.Stdout, "socket    "+sock+"\n") {
		t.Fatalf("postern status did not start the activated gateway: %s\n%s", r, l2.Log())
	}
	// The keys went with the old process.
	e.Setenv("SSH_AUTH_SOCK", sock)
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Fatalf("after a new activation: %s\n%s", r, l2.Log())
	}
	l2.cmd.Process.Signal(syscall.SIGTERM)
	l2.wait(t)

	// postern agent --ensure starts it too, and reuses it rather than
	// start another agent on the manager's socket.
	l3 := startLauncher(t, e, passed, nil)
	e.Unsetenv("SSH_AUTH_SOCK")
	r := e.Run("postern", "agent", "--ensure", "-s")
	if r.Code != 0 || !strings.Contains(r.Stdout, fmt.Sprintf("reusing the agent (pid %d) at %s", l3.cmd.Process.Pid, sock)) {
		t.Fatalf("postern agent --ensure on the activated socket: %s\n%s", r, l3.Log())
	}
	l3.cmd.Process.Signal(syscall.SIGTERM)
	l3.wait(t)
}

// The checks postern makes on a socket of its own hold for one a
// launcher made: a socket others may connect to keeps the agent from
// starting; so does -a naming another socket. A socket made without
// PassCredentials=yes keeps no credentials for the request that started
// the agent: that request is refused, and said so; the next is served.
func TestSocketActivationChecks(t *testing.T) {
	need(t, "systemd-socket-activate", "ssh-add")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	dir := e.Path("run", "postern")
	os.MkdirAll(dir, 0o700)
	sock := filepath.Join(dir, "agent.sock")
	e.Setenv("SSH_AUTH_SOCK", sock)

	// systemd-socket-activate makes its sockets 0644.
	l := startLauncher(t, e, nil, []string{"-l", sock})
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm()&0o077 == 0 {
		t.Fatalf("the launcher's socket: %v %v (this test wants one open to others)", fi, err)
	}
	// ssh-add learns of the refusal as the agent hangs up: reading the
	// answer, or, should the hang-up come before it asked (a busy
	// machine), writing the request, which SIGPIPE ends.
	if r := e.Run("ssh-add", "-l"); !strings.Contains(r.Stderr, "error fetching identities") && r.Signal != syscall.SIGPIPE {
		t.Fatalf("ssh-add -l on a refused socket: %s", r)
	}
	if code := l.wait(t); code != 1 || !strings.Contains(l.Log(), "SocketMode=0600") {
		t.Fatalf("agent on a %s socket: exit %d\n%s", "0644", code, l.Log())
	}
	os.Remove(sock)

	// -a naming another socket.
	l = startLauncher(t, e, nil, []string{"-l", sock}, "-a", filepath.Join(dir, "other.sock"))
	os.Chmod(sock, 0o600)
	e.Run("ssh-add", "-l")
	if code := l.wait(t); code != 1 || !strings.Contains(l.Log(), "but -a names") {
		t.Fatalf("agent with -a naming another socket: exit %d\n%s", code, l.Log())
	}
	os.Remove(sock)

	// Without PassCredentials=yes.
	l = startLauncher(t, e, nil, []string{"-l", sock})
	os.Chmod(sock, 0o600)
	if r := e.Run("ssh-add", "-l"); !strings.Contains(r.Stderr, "error fetching identities") {
		t.Fatalf("the request sent before the agent passed credentials was served: %s\n%s", r, l.Log())
	}
	l.WaitLog(t, "does not pass credentials")
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Fatalf("the next connection: %s\n%s", r, l.Log())
	}
	l.cmd.Process.Signal(syscall.SIGTERM)
	if code := l.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, l.Log())
	}
}

// make install installs both units, pointing at the installed binary;
// systemd-analyze finds nothing to say about them; and the socket unit
// makes the socket the agent accepts, with the name it looks for, at the
// path the service names.
func TestSystemdUnitsInstalled(t *testing.T) {
	need(t, "systemd-analyze")
	e := newEnv(t)
	prefix := e.Path("prefix")
	makeInstall(t, e, "PREFIX="+prefix)
	units := filepath.Join(prefix, "lib", "systemd", "user")
	read := func(name string) string {
		p := filepath.Join(units, name)
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("%s: %v %v", p, fi, err)
		}
		return string(mustRead(t, p))
	}
	service, socket := read("postern.service"), read("postern.socket")
	bin := filepath.Join(prefix, "bin", "postern")
	if !strings.Contains(service, "ExecStart="+bin+" agent -D -a %t/postern/agent.sock\n") {
		t.Fatalf("postern.service does not start %s on the socket:\n%s", bin, service)
	}
	for _, want := range []string{"ListenStream=%t/postern/agent.sock\n", "FileDescriptorName=agent\n",
		"SocketMode=0600\n", "DirectoryMode=0700\n", "PassCredentials=yes\n", "Service=postern.service\n"} {
		if !strings.Contains(socket, want) {
			t.Errorf("postern.socket lacks %q", strings.TrimSpace(want))
		}
	}
	verify := e.Command("systemd-analyze", "--user", "--man=no", "verify",
		filepath.Join(units, "postern.socket"), filepath.Join(units, "postern.service"))
	if r := e.finish(verify, ""); r.Code != 0 || r.Stderr != "" || r.Stdout != "" {
		t.Fatalf("systemd-analyze verify: %s", r)
	}
}

// A service manager that waits for the agent to be ready (Type=notify,
// as contrib's postern.service is) hears READY=1 once the agent socket
// serves, and not before: the unit's ExecStartPost then points
// SSH_AUTH_SOCK at a socket that answers. The test plays the manager's
// end of the notification socket (sd_notify(3)).
func TestForegroundAgentNotifiesReadiness(t *testing.T) {
	need(t, "ssh-add")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	notify := e.Path("notify")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sock := e.Path("run", "postern", "agent.sock")
	cmd := e.Command("postern", "agent", "-D", "-a", sock)
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+notify)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	l.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	n, err := l.Read(buf)
	if err != nil {
		t.Fatalf("the agent told the service manager nothing: %v", err)
	}
	msg := strings.Split(string(buf[:n]), "\n")
	if !slices.Contains(msg, "READY=1") || !slices.Contains(msg, fmt.Sprintf("MAINPID=%d", cmd.Process.Pid)) {
		t.Fatalf("the agent told the service manager %q", buf[:n])
	}
	e.Setenv("SSH_AUTH_SOCK", sock)
	if r := e.Run("ssh-add", "-l"); r.Code != 0 && r.Code != 1 {
		t.Fatalf("ssh-add -l once the agent said it was ready: %s", r)
	}
}
