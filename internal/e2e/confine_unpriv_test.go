package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/syncbuf"
)

// nobodyUID is the unprivileged user the test becomes.
const nobodyUID = 65534

// nobodyWorld is a gateway run by an ordinary user: its HOME and XDG
// directories, owned by that user, under the test's directory.
type nobodyWorld struct {
	t    *testing.T
	dir  string
	sock string
	env  []string
}

func newNobodyWorld(t *testing.T, e *Env) *nobodyWorld {
	need(t, "setpriv", "setsid", "git")
	needRoot(t, "to become an unprivileged user")
	dir := e.Path("nobody")
	for _, d := range []string{"", "home", "home/.cache", "state", "config", "config/postern", "run", "work"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
		os.Chown(filepath.Join(dir, d), nobodyUID, nobodyUID)
	}
	os.Chmod(e.Dir, 0o711)
	w := &nobodyWorld{t: t, dir: dir, sock: filepath.Join(dir, "run", "postern", "agent.sock")}
	w.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir + "/home", "XDG_STATE_HOME=" + dir + "/state",
		"XDG_CONFIG_HOME=" + dir + "/config", "XDG_RUNTIME_DIR=" + dir + "/run", "SSH_AUTH_SOCK=" + w.sock, "LANG=C"}
	return w
}

// command runs args as the user, in its working directory.
func (w *nobodyWorld) command(args ...string) *exec.Cmd {
	uid := strconv.Itoa(nobodyUID)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + uid, "--regid=" + uid, "--clear-groups", "--"}, args...)...)
	cmd.Env = w.env
	cmd.Dir = w.dir + "/work"
	return cmd
}

func (w *nobodyWorld) mustRun(args ...string) string {
	w.t.Helper()
	out, err := w.command(args...).CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeFile writes a file the user owns.
func (w *nobodyWorld) writeFile(name, content string, mode os.FileMode) string {
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		w.t.Fatal(err)
	}
	os.Chown(p, nobodyUID, nobodyUID)
	return p
}

// As users run it, without privileges: the gateway, a confined run and
// the approver as one ordinary user, and a real sshd. The run's ssh and
// git (clone and push over ssh) sign through the run's socket once a
// person in another session approves; the run's supervisor and the
// approver are not dumpable, and the gateway still registers the run
// (reading its namespaces, which its user owns), identifies the run's
// ssh and answers the approver.
func TestConfinedRunUnprivileged(t *testing.T) {
	e := newEnv(t)
	w := newNobodyWorld(t, e)
	key := filepath.Join(w.dir, "home", "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nobody-key", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	os.Chown(key, nobodyUID, nobodyUID)
	sshd := startSSHD(t, string(mustRead(t, key+".pub")))
	// The user reads the server's known_hosts; the server's repository
	// is the server's own.
	os.Chmod(sshd.Dir, 0o711)
	os.Chmod(sshd.KnownHosts, 0o644)
	repo := filepath.Join(sshd.Dir, "repo.git")
	e.MustRun("git", "init", "-q", "--bare", "-b", "main", repo)
	// The user's directory, which holds its home and XDG directories, is
	// shown to runs read-only, as a home directory is outside the tests
	// (here it is under /tmp, which runs do not see, and which would hide
	// the state directory whatever postern does).
	w.writeFile("config/postern/config.toml", fmt.Sprintf("known_hosts = [%q]\n[run]\nread_only = [%q]\n", sshd.KnownHosts, w.dir), 0o600)

	agent := w.command(posternBin, "agent", "-d", "-a", w.sock)
	var agentLog syncbuf.Buffer
	agent.Stdout, agent.Stderr = &agentLog, &agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { agent.Process.Kill(); agent.Wait() }()
	waitFor(t, func() bool {
		c, err := net.Dial("unix", w.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	w.mustRun("ssh-add", key)
	// The person's console, in a session of its own, outside the run (as
	// the approver, it makes itself non-dumpable; the gateway admits it).
	consoleIn, consoleW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	console := w.command(posternBin, "approve")
	var consoleOut syncbuf.Buffer
	console.Stdin, console.Stdout, console.Stderr = consoleIn, &consoleOut, &consoleOut
	console.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	consoleIn.Close()
	defer func() { consoleW.Close(); console.Process.Kill(); console.Wait() }()
	waitFor(t, func() bool {
		var st struct {
			Approvers []struct {
				Name      string
				Reachable bool
			}
		}
		json.Unmarshal([]byte(w.mustRun(posternBin, "status", "--json")), &st)
		for _, a := range st.Approvers {
			if a.Name == "console" && a.Reachable {
				return true
			}
		}
		return false
	})

	sshArgs := strings.Join(sshd.SSHArgs(), " ")
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", sshd.User, sshd.Port, repo)
	w.writeFile("work/job.sh", fmt.Sprintf(`set -e
(echo sock=$SSH_AUTH_SOCK; id -u; ls -A %s/state/postern | grep -q . && echo STATE-VISIBLE; echo procs=$(ls /proc | grep -c '^[0-9]')) > info 2>&1
ssh %s %s echo via-ssh > ssh.out
export GIT_SSH_COMMAND="ssh %s"
git clone -q %s clone 2>&1
cd clone
echo change > file
git add file
git -c user.name=t -c user.email=t@example.com commit -qm from-the-run
git push -q origin HEAD:main 2>&1
`, w.dir, sshArgs, sshd.Target(), sshArgs, url), 0o600)
	run := w.command(posternBin, "run", "--", "/bin/sh", "job.sh")
	// The run has a terminal session of its own, as in another terminal
	// than the approver's.
	run.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var runOut syncbuf.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var runErr error
	runDone := make(chan struct{})
	go func() { runErr = run.Wait(); close(runDone) }()
	defer func() {
		select {
		case <-runDone:
		default:
			run.Process.Kill()
			<-runDone
		}
	}()

	// The run's ssh waits on a card that says how the run is confined.
	var cards []cardJSON
	for deadline := time.Now().Add(30 * time.Second); len(cards) == 0; time.Sleep(20 * time.Millisecond) {
		select {
		case <-runDone:
			t.Fatalf("the run ended before its card showed: %v\n%s\n%s", runErr, runOut.String(), agentLog.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no card:\n%s\n%s", runOut.String(), agentLog.String())
		}
		json.Unmarshal([]byte(w.mustRun(posternBin, "approve", "--list", "--json")), &cards)
	}
	text := w.mustRun(posternBin, "approve", "--list")
	shell, _ := filepath.EvalSymlinks("/bin/sh")
	if !strings.Contains(text, "Confinement: confined: namespaces, Landlock ABI ") || !strings.Contains(text, "Run: "+filepath.Base(shell)+" ") {
		t.Fatalf("the card:\n%s", text)
	}
	info := string(mustRead(t, filepath.Join(w.dir, "work", "info")))
	if !strings.Contains(info, "sock="+w.sock+".run-") || !strings.Contains(info, "65534\n") || strings.Contains(info, "STATE-VISIBLE") {
		t.Fatalf("inside the unprivileged confined run:\n%s", info)
	}
	var procs int
	fmt.Sscanf(info[strings.Index(info, "procs="):], "procs=%d", &procs)
	if procs == 0 || procs > 10 {
		t.Fatalf("the run sees %d processes:\n%s", procs, info)
	}
	if sess := w.mustRun(posternBin, "sessions", "--json"); !strings.Contains(sess, `"confinement": "confined: namespaces, Landlock ABI `) {
		t.Fatalf("sessions:\n%s", sess)
	}
	// The supervisor is not dumpable: its environment is not the user's
	// to read.
	if out, err := w.command("cat", fmt.Sprintf("/proc/%d/environ", run.Process.Pid)).CombinedOutput(); err == nil {
		t.Fatalf("a same-user process read postern run's environment: %s", out)
	}
	// The person approves, from a session outside the run (the approver
	// makes itself non-dumpable too; the gateway admits it).
	w.mustRun(posternBin, "approve", cards[0].ID, "--session")
	<-runDone
	if runErr != nil {
		t.Fatalf("the run: %v\n%s\n%s", runErr, runOut.String(), agentLog.String())
	}
	if out := string(mustRead(t, filepath.Join(w.dir, "work", "ssh.out"))); out != "via-ssh\n" {
		t.Fatalf("ssh in the run printed %q", out)
	}
	if r := e.Run("git", "-C", repo, "log", "--format=%s", "main"); r.Code != 0 || r.Stdout != "from-the-run\n" {
		t.Fatalf("the push did not reach the server: %s", r)
	}
	// One card, one session grant: ssh, the clone and the push signed.
	if n := strings.Count(agentLog.String(), "msg=signed "); n != 3 {
		t.Fatalf("%d signatures:\n%s", n, agentLog.String())
	}
	if !strings.Contains(agentLog.String(), "exe=/usr/bin/ssh") {
		t.Fatalf("the gateway did not identify the run's ssh:\n%s", agentLog.String())
	}
}
