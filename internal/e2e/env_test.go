package e2e

// Test environment: a postern binary built once, private XDG directories
// per test, a gateway started with "postern agent", and helpers to run the
// real OpenSSH tools against it.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/ptyrelay/ptytest"
	"github.com/postern/postern/internal/syncbuf"
	"github.com/postern/postern/internal/vault"
)

var posternBin string

func TestMain(m *testing.M) {
	if mode := os.Getenv("POSTERN_E2E_HELPER"); mode != "" {
		execHelper(mode)
		return
	}
	closeInheritedOnExec()
	ptytest.DetachTerminal()
	ptytest.DefaultSignals()
	dir, err := os.MkdirTemp(tempBase(), "postern-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Readable by everyone: one test runs the agent as another user.
	os.Chmod(dir, 0o755)
	posternBin = filepath.Join(dir, "postern")
	// Built as make build builds it, so that what the benchmarks measure
	// is what people run: one static program (TestOneStaticProgram).
	args := []string{"build", "-trimpath", "-o", posternBin}
	cgo := "CGO_ENABLED=0"
	if os.Getenv("POSTERN_E2E_RACE") != "" {
		// The race detector in the gateway itself: go test can only
		// instrument the test binary. It needs cgo.
		args = append(args, "-race")
		cgo = "CGO_ENABLED=1"
	}
	build := exec.Command("go", append(args, "github.com/postern/postern/cmd/postern")...)
	build.Env = append(os.Environ(), cgo)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building postern:", err)
		os.Exit(1)
	}
	// Executable by everyone whatever the umask (go build leaves a
	// umask of 077 a binary only its owner runs).
	os.Chmod(posternBin, 0o755)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need fails the test when a program it drives is missing: a test that
// cannot run is a failure, never a silent skip. .ci/run installs them
// all.
func need(t testing.TB, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if p == "sshd" {
			if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
				continue // outside many users' PATH
			}
		}
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed; .ci/run installs it", p)
		}
	}
}

// needRoot fails a test that must run as root (as the tests run in CI):
// to mount, to act as another user.
func needRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs as root (as CI runs the tests): %s", why)
	}
}

// Env is one test's private world: the XDG directories in a temporary
// directory, HOME beside it (not in it: commands, and runs, start in
// Dir, and a confined run may not start where it would write the home
// directory), and the environment every command runs with.
type Env struct {
	t       testing.TB
	Dir     string
	home    string
	env     []string
	postern string // what commands named postern run: posternBin unless UsePostern

	agents  []*Agent  // the gateways started, for what a failed wait reports
	drivers []*Driver // the runs started, likewise
	// consoles are the consoles started: a gateway started while one
	// runs is not taken to be up until the console has attached to it,
	// as the person's would, so that a card is not refused meanwhile
	// (no_approver).
	consoles []*Console
}

// mostlyWaits marks a test that spends its time waiting (on a person's
// pace, a timer, a remote sleep, the disk) rather than on the CPU: such
// tests run side by side (t.Parallel), as many at once as go test's
// -parallel allows (make e2e: 4), once the others have run one after
// another. Each keeps its state in its own Env, as every test does; a
// test that changes anything of the process's (its environment, its
// limits) or of the machine's cannot be one of them.
func mostlyWaits(t *testing.T) { t.Parallel() }

func newEnv(t testing.TB) *Env {
	t.Helper()
	dir, err := os.MkdirTemp(tempBase(), "pe2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &Env{t: t, Dir: dir, home: dir + "-home"}
	t.Cleanup(func() { os.RemoveAll(e.home) })
	for _, d := range []string{e.home, e.Path("state"), e.Path("config", "postern"), e.Path("run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.env = []string{
		"PATH=" + filepath.Dir(posternBin) + ":" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"XDG_STATE_HOME=" + e.Path("state"),
		"XDG_CONFIG_HOME=" + e.Path("config"),
		"XDG_RUNTIME_DIR=" + e.Path("run"),
		"POSTERN_KDF_TARGET=0",
		"LANG=C",
	}
	return e
}

// Path joins elements onto the test directory.
func (e *Env) Path(elem ...string) string {
	return filepath.Join(append([]string{e.Dir}, elem...)...)
}

// Home joins elements onto the test's home directory.
func (e *Env) Home(elem ...string) string {
	return filepath.Join(append([]string{e.home}, elem...)...)
}

// Setenv sets a variable for the commands run from now on.
func (e *Env) Setenv(k, v string) {
	e.Unsetenv(k)
	e.env = append(e.env, k+"="+v)
}

// Getenv returns a variable commands run with, "" when unset.
func (e *Env) Getenv(k string) string {
	for i := len(e.env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(e.env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// Unsetenv removes a variable.
func (e *Env) Unsetenv(k string) {
	kept := e.env[:0]
	for _, kv := range e.env {
		if !strings.HasPrefix(kv, k+"=") {
			kept = append(kept, kv)
		}
	}
	e.env = kept
}

// Environ returns the environment commands run with.
func (e *Env) Environ() []string { return append([]string(nil), e.env...) }

// WriteFile writes a file relative to the test directory.
func (e *Env) WriteFile(name, content string, mode os.FileMode) string {
	e.t.Helper()
	p := e.Path(name)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// Config writes the postern configuration file. Unless content has a
// [run] section, one is added that shows confined runs the test's
// programs (the test binary and postern, both under /tmp, which is
// private to a run) read-only.
func (e *Env) Config(content string) {
	if !strings.Contains(content, "[run]") {
		content += runSection()
	}
	e.WriteFile("config/postern/config.toml", content, 0o600)
}

// reloads counts the configurations the gateway has put in force since it
// started.
func (a *Agent) reloads() int { return strings.Count(a.Log(), "configuration reloaded") }

// Reconfigure writes the configuration file, a change that loosens
// nothing, and waits until the running gateway has put it in force.
func (a *Agent) Reconfigure(t testing.TB, content string) {
	t.Helper()
	before := a.reloads()
	a.env.Config(content)
	for deadline := time.Now().Add(15 * time.Second); a.reloads() == before; sleep10ms() {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not put the new configuration in force (one that loosens waits for ApprovePolicy):\n%s", a.Log())
		}
	}
}

// ApprovePolicy answers, as the person would, the policy change card a
// looser configuration written while a gateway runs brings up, and
// waits until the change is in force.
func (a *Agent) ApprovePolicy(t testing.TB) {
	t.Helper()
	e := a.env
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range e.cards() {
			if c.Kind == "policy_change" {
				before := a.reloads()
				e.MustRun("postern", "approve", c.ID, "--once")
				waitFor(t, func() bool { return a.reloads() > before })
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no policy change card appeared\n%s", a.Log())
}

// ForgetApproved removes the gateway's record of the approved
// configuration while no gateway runs, from the state directory and from
// the vault (opened with the passphrase in passFile): the next one takes
// the file as approved, as at a first start. (Tests use it to restart a
// gateway with settings read only at start, such as the bastion's.)
func (e *Env) ForgetApproved(passFile string) {
	e.t.Helper()
	os.Remove(e.Path("state", "postern", "approved-config.toml"))
	pass, err := os.ReadFile(passFile)
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := vault.Open(e.Path("state", "postern", "vault"), bytes.TrimRight(pass, "\n"))
	if err != nil {
		e.t.Fatalf("opening the vault to forget the approved configuration: %v", err)
	}
	defer v.Wipe()
	if v.DeleteSecret(api.SecretApprovedConfig) {
		if err := v.Save(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// runSection is the [run] section the tests' confined runs need.
func runSection() string {
	self, _ := os.Executable()
	return fmt.Sprintf("\n[run]\nread_only = [%q, %q]\n", filepath.Dir(self), filepath.Dir(posternBin))
}

// Result is a finished command.
type Result struct {
	Stdout, Stderr string
	Code           int            // -1: killed by Signal
	Signal         syscall.Signal // what killed it, or 0
}

func (r Result) String() string {
	code := fmt.Sprint("exit ", r.Code)
	if r.Signal != 0 {
		code = "killed by " + unix.SignalName(r.Signal)
	}
	return fmt.Sprintf("%s\nstdout: %s\nstderr: %s", code, r.Stdout, r.Stderr)
}

// Command prepares a command with the test's environment. OpenSSH's
// ssh, scp and sftp must be given a configuration file (-F): without
// one they read the ~/.ssh/config of the user who runs the tests, from
// the password database's home whatever HOME says, which the test does
// not control.
func (e *Env) Command(name string, args ...string) *exec.Cmd {
	switch filepath.Base(name) {
	case "ssh", "scp", "sftp":
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-F") }) {
			e.t.Helper()
			e.t.Fatalf("%s %q would read the ~/.ssh/config of the user who runs the tests: give it -F", name, args)
		}
	}
	if name == "postern" {
		name = cmp.Or(e.postern, posternBin)
	}
	cmd := testCommand(name, args...)
	cmd.Env = e.Environ()
	cmd.Dir = e.Dir
	return cmd
}

// UsePostern makes bin, a copy of postern, the one the person runs:
// commands named postern run it, and its directory comes first on PATH.
func (e *Env) UsePostern(bin string) {
	e.t.Helper()
	b, err := os.ReadFile(posternBin)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(bin), 0o755)
	}
	if err == nil {
		err = os.WriteFile(bin, b, 0o755)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.postern = bin
	e.Setenv("PATH", filepath.Dir(bin)+":"+e.Getenv("PATH"))
}

// Run runs a command to completion (with a timeout) and returns its result.
func (e *Env) Run(name string, args ...string) Result {
	e.t.Helper()
	return e.RunInput("", name, args...)
}

// RunInput runs a command with stdin.
func (e *Env) RunInput(stdin, name string, args ...string) Result {
	e.t.Helper()
	cmd := e.Command(name, args...)
	return e.finish(cmd, stdin)
}

// outputHeld is how long finish waits, once a command has exited (or
// been killed), for the processes it left behind to let go of its
// output.
const outputHeld = 5 * time.Second

func (e *Env) finish(cmd *exec.Cmd, stdin string) Result {
	e.t.Helper()
	var out, errb syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = outputHeld
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("%s: %v", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if errors.Is(err, exec.ErrWaitDelay) {
			e.t.Fatalf("%s %q exited and left a process that still held its output %v later\nstdout: %s\nstderr: %s", cmd.Path, cmd.Args, outputHeld, out.String(), errb.String())
		}
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		e.t.Fatalf("%s %q did not finish in 90s\nstdout: %s\nstderr: %s", cmd.Path, cmd.Args, out.String(), errb.String())
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), Code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = ws.Signal()
	}
	return r
}

// MustRun runs a command that must succeed.
func (e *Env) MustRun(name string, args ...string) Result {
	e.t.Helper()
	r := e.Run(name, args...)
	if r.Code != 0 {
		e.t.Fatalf("%s %q failed: %s", name, args, r)
	}
	return r
}

// Agent is a running "postern agent -d".
type Agent struct {
	env    *Env
	Socket string
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer
	done   chan struct{}
}

// StartAgent runs postern agent -d -a SOCKET in the background and waits
// for its eval line; -d logs everything, which tests read. Extra
// arguments are added before -a.
func (e *Env) StartAgent(extra ...string) *Agent {
	e.t.Helper()
	sock := e.Path("run", "postern", "agent.sock")
	return e.startAgentAt(sock, extra...)
}

func (e *Env) startAgentAt(sock string, extra ...string) *Agent {
	e.t.Helper()
	return e.startAgentVia(nil, "-d", sock, extra...)
}

// startQuietAgentAt runs the agent as the systemd unit in contrib does,
// postern agent -D -a SOCKET: in the foreground, logging warnings and
// errors only. Benchmarks measure it so, not with every request logged.
func (e *Env) startQuietAgentAt(sock string, extra ...string) *Agent {
	e.t.Helper()
	return e.startAgentVia(nil, "-D", sock, extra...)
}

// StartAgentWithFiles runs the agent as StartAgent does, with at most
// nofile open descriptors (prlimit(1) sets both limits).
func (e *Env) StartAgentWithFiles(nofile int, extra ...string) *Agent {
	e.t.Helper()
	need(e.t, "prlimit")
	lim := fmt.Sprint(nofile)
	return e.startAgentVia([]string{"prlimit", "--nofile=" + lim + ":" + lim}, "-d", e.Path("run", "postern", "agent.sock"), extra...)
}

// startDetachedAgent runs postern agent -s -a SOCKET, as eval "$(postern
// agent)" does, and returns the daemon it started, killed when the test
// ends.
func (e *Env) startDetachedAgent(sock string) *os.Process {
	e.t.Helper()
	r := e.MustRun("postern", "agent", "-s", "-a", sock)
	_, after, _ := strings.Cut(r.Stdout, "SSH_AGENT_PID=")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.Split(after, ";")[0]))
	if err != nil {
		e.t.Fatalf("no SSH_AGENT_PID in %q", r.Stdout)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { p.Kill() })
	return p
}

// startAgentVia starts the agent through the command line wrap (none
// when nil), in the foreground: -d (every request logged) or -D.
func (e *Env) startAgentVia(wrap []string, fg, sock string, extra ...string) *Agent {
	e.t.Helper()
	args := append([]string{"agent", fg}, extra...)
	args = append(args, "-a", sock)
	a := &Agent{env: e, Socket: sock, done: make(chan struct{})}
	a.cmd = e.Command("postern", args...)
	if wrap != nil {
		a.cmd = e.Command(wrap[0], append(append(wrap[1:], posternBin), args...)...)
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	a.cmd.Stderr = &lockedWriter{mu: &a.mu, w: &a.log}
	if err := a.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	e.agents = append(e.agents, a)
	e.t.Cleanup(func() {
		a.Stop()
		if strings.Contains(a.Log(), "WARNING: DATA RACE") {
			e.t.Errorf("the race detector found a data race in the gateway:\n%s", a.Log())
		}
	})
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "SSH_AUTH_SOCK=") {
			e.t.Fatalf("agent printed %q\nlog:\n%s", l, a.Log())
		}
	case <-time.After(30 * time.Second):
		e.t.Fatalf("agent did not start\nlog:\n%s", a.Log())
	}
	e.Setenv("SSH_AUTH_SOCK", sock)
	e.waitConsoles(sock)
	return a
}

// waitConsoles waits until the gateway at sock counts a console, if one
// of the consoles started still runs and follows sock: a console follows
// the gateway through a restart, a moment after the gateway is up.
func (e *Env) waitConsoles(sock string) {
	e.t.Helper()
	var live *Console
	for _, c := range e.consoles {
		select {
		case <-c.done:
		default:
			if c.sock == sock {
				live = c
			}
		}
	}
	if live == nil {
		return
	}
	for deadline := time.Now().Add(20 * time.Second); !e.consoleAttached(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(live.out)
			e.t.Fatalf("the console did not attach to the gateway started again:\n%s", b)
		}
	}
}

// Log returns what the agent logged so far.
func (a *Agent) Log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

// PID returns the agent's pid.
func (a *Agent) PID() int { return a.cmd.Process.Pid }

// Stop terminates the agent and waits for it.
func (a *Agent) Stop() {
	select {
	case <-a.done:
		return
	default:
	}
	a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		a.cmd.Process.Kill()
		<-a.done
	}
}

// WaitLog waits until the agent's log contains s.
func (a *Agent) WaitLog(t testing.TB, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for !strings.Contains(a.Log(), s) {
		if ctx.Err() != nil {
			t.Fatalf("agent log never showed %q:\n%s", s, a.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Keygen creates a key pair with ssh-keygen and returns the private key's
// path.
func (e *Env) Keygen(name, typ string, bits int, passphrase string) string {
	e.t.Helper()
	p := e.Path("keys", name)
	os.MkdirAll(filepath.Dir(p), 0o700)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", name, "-f", p}
	if bits > 0 {
		args = append(args, "-b", fmt.Sprint(bits))
	}
	e.MustRun("ssh-keygen", args...)
	return p
}

// AddKey runs ssh-add with args and the private key, then deletes the
// private key file: from then on only the agent can sign with it, so a
// client cannot fall back to reading the file.
func (e *Env) AddKey(key string, args ...string) {
	e.t.Helper()
	e.MustRun("ssh-add", append(args, key)...)
	if err := os.Remove(key); err != nil {
		e.t.Fatal(err)
	}
}

func sleep10ms() { time.Sleep(10 * time.Millisecond) }

// Kill kills the agent with SIGKILL, as a crash would, and waits.
func (a *Agent) Kill() {
	a.cmd.Process.Kill()
	<-a.done
}

// Console is a "postern approve" in line mode, attached to the gateway:
// an approver that shows every card (answers still come from "postern
// approve ID"). Without one, a card no askpass can show is refused at once
// (no_approver).
type Console struct {
	sock string // the agent socket it follows
	cmd  *exec.Cmd
	in   *os.File
	out  string
	done chan struct{}
}

// StartConsole starts a line-mode console and waits until the gateway
// counts it as an approver.
func (e *Env) StartConsole() *Console {
	e.t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	c := &Console{sock: e.Getenv("SSH_AUTH_SOCK"), in: pw, out: e.Path(fmt.Sprintf("console-%d.out", time.Now().UnixNano())), done: make(chan struct{})}
	f, err := os.Create(c.out)
	if err != nil {
		e.t.Fatal(err)
	}
	c.cmd = e.Command("postern", "approve")
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = pr, f, f
	// A console runs in a terminal of its own, not the requester's.
	c.cmd.SysProcAttr.Setsid = true
	if err := c.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	pr.Close()
	f.Close()
	go func() { c.cmd.Wait(); close(c.done) }()
	e.t.Cleanup(c.Stop)
	e.consoles = append(e.consoles, c)
	e.waitConsoles(c.sock)
	return c
}

// consoleAttached reports whether the gateway counts a console.
func (e *Env) consoleAttached() bool {
	r := e.Run("postern", "status", "--json")
	var st struct {
		Approvers []struct {
			Name      string
			Reachable bool
		}
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &st) != nil {
		return false
	}
	for _, a := range st.Approvers {
		if a.Name == "console" {
			return a.Reachable
		}
	}
	return false
}

// Output returns what the console printed so far.
func (c *Console) Output() string {
	b, _ := os.ReadFile(c.out)
	return string(b)
}

// Send writes an answer line to the console.
func (c *Console) Send(line string) { fmt.Fprintln(c.in, line) }

// Stop ends the console.
func (c *Console) Stop() {
	c.in.Close()
	c.cmd.Process.Kill()
	<-c.done
}
