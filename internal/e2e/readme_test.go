package e2e

// The README, followed literally on a fresh machine: its Set up and Use
// blocks are read from README.md and run as they are, in a home of their
// own, with the console in a real terminal (tmux) and ssh against a real
// sshd named "host" in ~/.ssh/config.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlocks returns the shell blocks of the README section that
// starts with heading, up to the next heading.
func readmeBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q", heading)
	}
	sec := readme[i+len(heading)+2:]
	if j := regexp.MustCompile(`\n##+ `).FindStringIndex(sec); j != nil {
		sec = sec[:j[0]]
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		out = append(out, m[1])
	}
	return out
}

// readmeWorld is a fresh machine's user: a home, an ssh key, "ssh host"
// leading to a real sshd, and the environment of a login shell.
type readmeWorld struct {
	t    *testing.T
	repo string
	dir  string
	env  []string
	sshd *SSHD
}

func newReadmeWorld(t *testing.T, runtimeDir bool, pathPrefix string) *readmeWorld {
	keepRepoBin(t)
	repo := repoCopy(t)
	dir, err := os.MkdirTemp(tempBase(), "readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &readmeWorld{t: t, repo: repo, dir: dir}
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	// The Go tool's caches stay where they are: a fresh machine would
	// download the modules once; the test does not need to.
	goenv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	// OpenSSH reads ~/.ssh/config from the password database's home, not
	// from $HOME: a one-line wrapper, first on PATH, points the real ssh at
	// this home's config, so that "ssh host" reaches the test's sshd.
	shim := filepath.Join(dir, "shim")
	os.Mkdir(shim, 0o700)
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(shim, "ssh"), []byte("#!/bin/sh\nexec "+sshPath+" -F \"$HOME/.ssh/config\" \"$@\"\n"), 0o755)
	// PATH as the system has it: the test's postern is not on it.
	path := []string{shim}
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if p != filepath.Dir(posternBin) {
			path = append(path, p)
		}
	}
	if pathPrefix != "" {
		path = append([]string{pathPrefix}, path...)
	}
	w.env = []string{
		"HOME=" + home, "PATH=" + strings.Join(path, ":"), "SHELL=/bin/bash", "LANG=C", "TERM=xterm-256color",
		"GOCACHE=" + goenv("GOCACHE"), "GOMODCACHE=" + goenv("GOMODCACHE"), "GOPATH=" + goenv("GOPATH"), "GOFLAGS=-mod=mod",
		"POSTERN_PASSPHRASE_FILE=" + filepath.Join(dir, "pass"), "POSTERN_KDF_TARGET=0",
	}
	if runtimeDir {
		run := filepath.Join(dir, "run")
		os.Mkdir(run, 0o700)
		w.env = append(w.env, "XDG_RUNTIME_DIR="+run)
	}
	os.WriteFile(filepath.Join(dir, "pass"), []byte("a vault passphrase\n"), 0o600)
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "me@laptop", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	w.sshd = startSSHD(t, pubKey(t, key)+"\n")
	cfg := fmt.Sprintf("Host host\n    HostName 127.0.0.1\n    Port %d\n    User %s\n    UserKnownHostsFile %s\n    BatchMode yes\n",
		w.sshd.Port, w.sshd.User, w.sshd.KnownHosts)
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(cfg), 0o600)
	return w
}

// bash runs a script in the repository with the world's environment, in
// a terminal session of its own (another terminal than the console's).
func (w *readmeWorld) bash(script string) Result {
	w.t.Helper()
	cmd := exec.Command("setsid", "-w", "bash", "-e", "-c", script)
	cmd.Env, cmd.Dir = w.env, w.repo
	cmd.Stdin = nil
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = cmd.ProcessState.ExitCode()
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// tmux runs tmux on the world's own server.
func (w *readmeWorld) tmux(args ...string) Result {
	cmd := exec.Command("tmux", append([]string{"-S", filepath.Join(w.dir, "tmux.sock"), "-f", "/dev/null"}, args...)...)
	cmd.Env, cmd.Dir = w.env, w.repo
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = 1
	}
	return Result{Stdout: string(out), Code: code}
}

func (w *readmeWorld) screen() string { return w.tmux("capture-pane", "-p", "-J").Stdout }

// screens is the screen and, while a full-screen program (the console)
// shows its own, the terminal's main screen under it: what was printed
// before the console started stays there to be read, however soon the
// console covered it.
func (w *readmeWorld) screens() string {
	s := w.screen()
	if r := w.tmux("capture-pane", "-p", "-J", "-a"); r.Code == 0 {
		s += "\n" + r.Stdout
	}
	return s
}

func (w *readmeWorld) waitScreen(what string, limit time.Duration) {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(w.screens(), what) {
		if time.Now().After(deadline) {
			w.t.Fatalf("the console never showed %q:\n%s", what, w.screens())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestREADMEFromAFreshMachine(t *testing.T) {
	need(t, "tmux", "ssh", "sshd", "ssh-keygen", "ssh-add", "make", "go", "setsid")
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	setup := readmeBlocks(t, readme, "## Set up")
	use := readmeBlocks(t, readme, "## Use")
	if len(setup) != 2 || len(use) != 1 {
		t.Fatalf("README: %d set-up blocks (want 2: the agent, the console) and %d use blocks (want 1)", len(setup), len(use))
	}
	t.Run("runtime-dir,bin-not-on-path", func(t *testing.T) {
		followREADME(t, newReadmeWorld(t, true, ""), setup, use)
	})
	t.Run("no-runtime-dir,after-make-install", func(t *testing.T) {
		w := newReadmeWorld(t, false, "")
		prefix := filepath.Join(w.dir, "prefix")
		if r := w.bash("make -s install PREFIX=" + prefix); r.Code != 0 {
			t.Fatalf("make install: %s", r)
		}
		w.env[1] = "PATH=" + filepath.Join(prefix, "bin") + ":" + strings.TrimPrefix(w.env[1], "PATH=")
		followREADME(t, w, setup, use)
	})
}

// armDelay is how long the console keeps a new card from being answered
// (cmd/postern console_prompt.go), and a little more.
const armDelay = 700 * time.Millisecond

func followREADME(t *testing.T, w *readmeWorld, setup, use []string) {
	// The first terminal: the agent, and where cards will appear.
	r := w.bash(setup[0] + "\npostern status")
	// The agent is stopped whatever became of the rest of the set-up.
	pid := regexp.MustCompile(`Agent pid (\d+)`).FindStringSubmatch(r.Stdout)
	t.Cleanup(func() {
		if pid != nil {
			stopDetached(t, pid[1])
		}
	})
	if r.Code != 0 {
		t.Fatalf("set-up: %s", r)
	}
	for _, want := range []string{"Agent pid ", `approval cards appear in "postern approve"`, "gateway   pid "} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("set-up does not say %q:\n%s", want, r.Stdout)
		}
	}

	// The second terminal: the console, reusing the agent.
	if r := w.tmux("new-session", "-d", "-x", "160", "-y", "50", "bash --norc --noprofile"); r.Code != 0 {
		t.Fatalf("tmux: %s", r)
	}
	t.Cleanup(func() { w.tmux("kill-server") })
	w.tmux("send-keys", "-l", strings.TrimSpace(setup[1]))
	w.tmux("send-keys", "Enter")
	w.waitScreen("reusing the agent (pid "+pid[1]+")", 60*time.Second)
	w.waitScreen("no pending cards: waiting", 30*time.Second)

	// The Use section, pasted as is into the first terminal, while the
	// person answers the card on the console.
	done := make(chan Result, 1)
	go func() { done <- w.bash(setup[0] + "\n" + use[0]) }()
	start := time.Now()
	for !strings.Contains(w.screen(), ": s approves ") {
		select {
		case r := <-done:
			t.Fatalf("the Use section ended before its card: %s\nconsole:\n%s", r, w.screen())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("no card on the console:\n%s", w.screen())
		}
	}
	t.Logf("ssh's card on the console after %s (the Use section's earlier lines included)", time.Since(start))
	if s := w.screen(); !strings.Contains(s, "Requested by: ssh (") || !strings.Contains(s, "Destination: host key SHA256:") {
		t.Fatalf("the card on the console:\n%s", s)
	}
	time.Sleep(armDelay)
	w.tmux("send-keys", "o")
	w.waitScreen(": approved once", 30*time.Second)
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the Use section did not finish")
	}
	if r.Code != 0 {
		t.Fatalf("the Use section failed: %s\nconsole:\n%s", r, w.screen())
	}
	// What happened, afterwards, from the person's own commands.
	for _, want := range []string{
		"me@laptop (ED25519)",     // ssh-add -l, after vault init and unlock
		"ALLOWED\n",               // postern why
		"approved_once",           // postern why
		" card_shown card=C",      // postern activity: the card
		" sign card=C",            // postern activity: the signature, and the card that approved it
		"audit     ",              // postern status
		"counts    1 key, 0 runs", // postern status
		"console       yes 1 attached",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the Use section's output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if n := strings.Count(w.sshd.Log(), "Accepted publickey"); n != 1 {
		t.Errorf("sshd accepted %d logins, want 1", n)
	}
}

// stopDetached stops a daemon the test did not start as its child (the
// agent "make agent" starts) and waits until it has exited: it writes
// its state as it stops, and would write it into a directory the test
// has removed meanwhile.
func stopDetached(t *testing.T, pid string) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatal(err)
	}
	gone := func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return true
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "Z") // exited, not yet reaped
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		syscall.Kill(n, sig)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if gone() {
				return
			}
		}
		t.Errorf("agent pid %s did not exit on %v", pid, sig)
	}
}
