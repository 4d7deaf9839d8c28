package marker

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/bastion/journal"
)

// host is a stand-in for a remote host: the wrapper and the probe run in
// the local /bin/sh with a temporary HOME, as sshd would run them.
type host struct {
	t    *testing.T
	home string
	env  []string
}

func newHost(t *testing.T) *host {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Fatal("no /bin/sh")
	}
	home := t.TempDir()
	return &host{t: t, home: home, env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SHELL=/bin/sh"}}
}

func (h *host) runDir(id string) string {
	return filepath.Join(h.home, ".local/state/postern/runs", id)
}

// command returns the wrapped command, ready to start in its own process
// group (as sshd starts a session).
func (h *host) command(id string, cmd []byte, shell string) *exec.Cmd {
	h.t.Helper()
	w, err := Wrap(id, cmd)
	if err != nil {
		h.t.Fatal(err)
	}
	c := exec.Command(shell, "-c", w)
	c.Env = h.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

type result struct {
	stdout, stderr []byte
	state          *os.ProcessState
}

func (h *host) run(id string, cmd []byte, stdin []byte) result {
	h.t.Helper()
	c := h.command(id, cmd, "/bin/sh")
	var out, errb bytes.Buffer
	c.Stdin = bytes.NewReader(stdin)
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatal(err)
	}
	return result{out.Bytes(), errb.Bytes(), c.ProcessState}
}

func (h *host) probe(id string) journal.Resolution {
	h.t.Helper()
	p, err := Probe(id)
	if err != nil {
		h.t.Fatal(err)
	}
	c := exec.Command("/bin/sh", "-c", p)
	c.Env = h.env
	out, err := c.Output()
	if err != nil {
		h.t.Fatalf("probe: %v", err)
	}
	r, err := ParseProbe(id, out, false)
	if err != nil {
		h.t.Fatalf("ParseProbe: %v\n%s", err, out)
	}
	return r
}

// waitFor waits for path to exist; the bound only keeps a broken test
// from hanging, and is generous for a loaded machine.
func (h *host) waitFor(path string) {
	h.t.Helper()
	for range 3000 {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("%s never appeared", path)
}

func wantResult(t *testing.T, r journal.Resolution, result string, status int) {
	t.Helper()
	if r.By != journal.ByProbe || r.Result != result {
		t.Fatalf("probe: %s by %s, want %s\n%s", r.Result, r.By, result, r.Evidence)
	}
	if result == journal.ResultRan && (r.ExitStatus == nil || *r.ExitStatus != status) {
		t.Fatalf("probe: exit status %v, want %d\n%s", r.ExitStatus, status, r.Evidence)
	}
}

// The command reaches the shell byte for byte: SHELL is a script that
// saves its -c argument before running it.
func TestWrapExactBytes(t *testing.T) {
	h := newHost(t)
	dump := filepath.Join(h.home, "dump")
	shell := filepath.Join(h.home, "shell")
	os.WriteFile(shell, []byte("#!/bin/sh\nprintf %s \"$2\" > \""+dump+"\"\nexec /bin/sh \"$@\"\n"), 0o755)
	h.env[2] = "SHELL=" + shell

	cases := []struct{ cmd, out string }{
		{`echo "it's" 'a "quote"'`, "it's a \"quote\"\n"},
		{`x='$HOME'; printf '%s|%s|%s|%s\n' "$x" \\ "$(echo sub)" ` + "`echo tick`", "$HOME|\\|sub|tick\n"},
		{"printf 'line1\\n'\necho line2\n\n\n", "line1\nline2\n"},
		{"printf '%s' '\xff\xfe\x80 raw'; printf '\\n'", "\xff\xfe\x80 raw\n"},
		{`printf '%s\n' 'back\slash\\' "tab	here"`, "back\\slash\\\\\ntab\there\n"},
		{`printf '%s\n' "!" '*' '~' '#' ';' '&&' '|' '>' '<' '$(id)'`, "!\n*\n~\n#\n;\n&&\n|\n>\n<\n$(id)\n"},
		{`printf '%s\n' ''"'"''"'"'' "'"`, "''\n'\n"},
		{"", ""},
	}
	for i, c := range cases {
		id := journal.NewID()
		r := h.run(id, []byte(c.cmd), nil)
		got, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(c.cmd)) {
			t.Errorf("case %d: the shell got %q, want %q", i, got, c.cmd)
		}
		if string(r.stdout) != c.out || r.state.ExitCode() != 0 || len(r.stderr) != 0 {
			t.Errorf("case %d: stdout %q (want %q), stderr %q, %v", i, r.stdout, c.out, r.stderr, r.state)
		}
		os.Remove(dump)
	}
}

// The login shell may be any of the POSIX shells Wrap names; each reads
// the wrapper the same way, and with bash as SHELL the command keeps
// bash's syntax. A shell that is not installed fails the test: .ci/run
// installs each (Debian packages dash, bash, zsh, ksh and busybox).
func TestWrapLoginShells(t *testing.T) {
	h := newHost(t)
	for _, sh := range []string{"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/zsh", "/bin/ksh", "/bin/busybox"} {
		if _, err := os.Stat(sh); err != nil {
			t.Errorf("%s is not installed; .ci/run installs it: %v", sh, err)
			continue
		}
		args := []string{"-c"}
		if strings.HasSuffix(sh, "busybox") {
			args = []string{"sh", "-c"}
		}
		cmd := []byte("printf '%s' 'a\\b' \"'\" '\xff'; exit 7")
		w, _ := Wrap(journal.NewID(), cmd)
		c := exec.Command(sh, append(args, w)...)
		c.Env = h.env
		out, _ := c.Output()
		if string(out) != "a\\b'\xff" || c.ProcessState.ExitCode() != 7 {
			t.Errorf("login shell %s: %q, %v", sh, out, c.ProcessState)
		}
	}
	h.env[2] = "SHELL=/bin/bash"
	r := h.run(journal.NewID(), []byte(`[[ -n $BASH_VERSION ]] && echo bash`), nil)
	if string(r.stdout) != "bash\n" {
		t.Errorf("with SHELL=/bin/bash: %q %q", r.stdout, r.stderr)
	}
}

func TestWrapStatusAndStreams(t *testing.T) {
	h := newHost(t)
	for _, code := range []int{0, 3, 255} {
		id := journal.NewID()
		r := h.run(id, []byte("exit "+strconv.Itoa(code)), nil)
		if r.state.ExitCode() != code {
			t.Errorf("exit %d: wrapper exited %v", code, r.state)
		}
		wantResult(t, h.probe(id), journal.ResultRan, code)
		b, _ := os.ReadFile(filepath.Join(h.runDir(id), "exit"))
		if !bytes.HasPrefix(b, []byte("status="+strconv.Itoa(code)+"\nsignal=\nended=")) {
			t.Errorf("exit record %q", b)
		}
		if fi, err := os.Stat(h.runDir(id)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("run directory: %v %v", fi.Mode(), err)
		}
	}

	// stdin, stdout and stderr pass through untouched, binary included.
	in := make([]byte, 300<<10)
	for i := range in {
		in[i] = byte(i * 7)
	}
	r := h.run(journal.NewID(), []byte("cat; printf 'to stderr\\n' >&2; exit 4"), in)
	if !bytes.Equal(r.stdout, in) || string(r.stderr) != "to stderr\n" || r.state.ExitCode() != 4 {
		t.Fatalf("streams: %d bytes out (want %d), stderr %q, %v", len(r.stdout), len(in), r.stderr, r.state)
	}
	// A command that reads part of stdin sees exactly its start.
	r = h.run(journal.NewID(), []byte("head -c 5"), []byte("hello, world"))
	if string(r.stdout) != "hello" {
		t.Fatalf("head -c 5: %q", r.stdout)
	}

	// XDG_STATE_HOME, which a session may send and sshd may accept, does
	// not move the markers: the probe, which runs without it, finds them.
	state := filepath.Join(h.home, "xdg")
	withXDG := append(slices.Clone(h.env), "XDG_STATE_HOME="+state)
	id := journal.NewID()
	c := h.command(id, []byte("true"), "/bin/sh")
	c.Env = withXDG
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.runDir(id), "exit")); err != nil {
		t.Fatalf("markers not under $HOME: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "postern")); err == nil {
		t.Fatal("markers written under XDG_STATE_HOME")
	}
	wantResult(t, h.probe(id), journal.ResultRan, 0)
}

// The same id never runs twice: the second run is refused and the side
// effect happens once.
func TestWrapRunsOnce(t *testing.T) {
	h := newHost(t)
	side := filepath.Join(h.home, "side-effect")
	cmd := []byte("echo ran >> '" + side + "'")
	id := journal.NewID()
	first := h.run(id, cmd, nil)
	second := h.run(id, cmd, nil)
	if first.state.ExitCode() != 0 {
		t.Fatalf("first run: %v %s", first.state, first.stderr)
	}
	if second.state.ExitCode() != ExitNotRun || !bytes.HasPrefix(second.stderr, []byte(MessagePrefix)) ||
		!bytes.Contains(second.stderr, []byte("already started")) {
		t.Fatalf("second run: %v %q", second.state, second.stderr)
	}
	if b, _ := os.ReadFile(side); string(b) != "ran\n" {
		t.Fatalf("side effect file holds %q", b)
	}
	wantResult(t, h.probe(id), journal.ResultRan, 0) // the refusal changed nothing
}

func TestWrapSignals(t *testing.T) {
	h := newHost(t)

	// A command killed by a signal sent to it alone: status 128+15.
	id := journal.NewID()
	r := h.run(id, []byte("kill -TERM $$"), nil)
	if r.state.ExitCode() != 143 {
		t.Fatalf("kill -TERM $$: %v", r.state)
	}
	wantResult(t, h.probe(id), journal.ResultRan, 143)

	// A signal to the session's process group (a terminal's ^C, sshd's
	// signal request) kills the command; the wrapper records it and dies of
	// the same signal, as the command would have without it.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		id := journal.NewID()
		running := filepath.Join(h.home, "running-"+id)
		c := h.command(id, []byte(": > '"+running+"'; sleep 30"), "/bin/sh")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		h.waitFor(running) // the command runs
		syscall.Kill(-c.Process.Pid, sig)
		c.Wait()
		ws := c.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("%v to the group: wrapper ended %v", sig, c.ProcessState)
		}
		// After a hangup the leader is gone at once; the subshell still
		// records the end.
		h.waitFor(filepath.Join(h.runDir(id), "exit"))
		res := h.probe(id)
		wantResult(t, res, journal.ResultRan, 128+int(sig))
		if !strings.Contains(res.Evidence, "exit.signal=") || !strings.Contains(res.Evidence, "killed by SIG") {
			t.Errorf("%v: evidence does not name the signal:\n%s", sig, res.Evidence)
		}
	}

	// A command that handles the signal and exits 0 is reported as exit 0.
	id = journal.NewID()
	running := filepath.Join(h.home, "running-"+id)
	c := h.command(id, []byte("trap 'exit 0' TERM; : > '"+running+"'; sleep 30 & wait"), "/bin/sh")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(running) // the trap is set
	syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
	c.Wait()
	if c.ProcessState.ExitCode() != 0 {
		t.Errorf("handled TERM: wrapper ended %v", c.ProcessState)
	}
	wantResult(t, h.probe(id), journal.ResultRan, 0)
}

func TestProbe(t *testing.T) {
	h := newHost(t)

	// Never started: the probe fences the id, and a late start is refused.
	id := journal.NewID()
	wantResult(t, h.probe(id), journal.ResultNotStarted, 0)
	side := filepath.Join(h.home, "late")
	late := h.run(id, []byte("touch '"+side+"'"), nil)
	if late.state.ExitCode() != ExitNotRun {
		t.Fatalf("a late start after the probe: %v %s", late.state, late.stderr)
	}
	if _, err := os.Stat(side); err == nil {
		t.Fatal("the late start ran the command")
	}
	res := h.probe(id)
	wantResult(t, res, journal.ResultNotStarted, 0)
	if !strings.Contains(res.Evidence, "fenced") {
		t.Errorf("second probe evidence:\n%s", res.Evidence)
	}

	// Running, then killed with the whole process group (SIGKILL leaves no
	// exit record): still running, then inconclusive.
	id = journal.NewID()
	c := h.command(id, []byte("sleep 30"), "/bin/sh")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(filepath.Join(h.runDir(id), "start"))
	wantResult(t, h.probe(id), journal.ResultStillRunning, 0)
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	c.Wait()
	res = h.probe(id)
	wantResult(t, res, journal.ResultInconclusive, 0)
	if !strings.Contains(res.Evidence, "no longer running") || !strings.Contains(res.Evidence, "start.pid=") {
		t.Errorf("evidence after kill -9:\n%s", res.Evidence)
	}

	// Completed.
	id = journal.NewID()
	h.run(id, []byte("exit 9"), nil)
	wantResult(t, h.probe(id), journal.ResultRan, 9)
}

// Without flock(1), the start record's pid stands in for the lock.
func TestProbeWithoutFlock(t *testing.T) {
	h := newHost(t)
	bin := filepath.Join(h.home, "bin")
	os.Mkdir(bin, 0o755)
	for _, tool := range []string{"mkdir", "date", "mv", "ps", "grep", "sleep", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s is not installed", tool)
		}
		os.Symlink(p, filepath.Join(bin, tool))
	}
	h.env[1] = "PATH=" + bin

	id := journal.NewID()
	c := h.command(id, []byte("sleep 30"), "/bin/sh")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(filepath.Join(h.runDir(id), "start"))
	b, _ := os.ReadFile(filepath.Join(h.runDir(id), "start"))
	if !bytes.Contains(b, []byte("lock=pid")) {
		t.Fatalf("start record without flock: %q", b)
	}
	wantResult(t, h.probe(id), journal.ResultStillRunning, 0)
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	c.Wait()
	wantResult(t, h.probe(id), journal.ResultInconclusive, 0)

	id = journal.NewID()
	h.run(id, []byte("exit 2"), nil)
	wantResult(t, h.probe(id), journal.ResultRan, 2)
}

func TestParseProbe(t *testing.T) {
	id := "01M8N7K5YANAXYX35XDKKVHY1R"
	report := func(lines ...string) []byte {
		return []byte("Welcome to prod-db-1\npostern-probe 1 " + id + "\r\n" + strings.Join(lines, "\n") + "\npostern-probe end\ntrailing noise\n")
	}
	cases := []struct {
		out      []byte
		result   string
		status   int
		why      string
		accepted bool // the host had accepted the command
	}{
		{report("state=fenced_now"), journal.ResultNotStarted, 0, "never started", false},
		// The wrapper makes its directory first: missing for a command
		// the host accepted, it was removed.
		{report("state=fenced_now"), journal.ResultInconclusive, 0, "removed", true},
		{report("state=present", "fenced.at=1", "lock=free"), journal.ResultInconclusive, 0, "removed", true},
		{report("state=present", "start.started=1", "aborted.signal=HUP", "lock=free"), journal.ResultNotStarted, 0, "SIGHUP", true},
		{report("state=present", "start.started=1", "exit.status=0", "exit.signal=", "lock=free"), journal.ResultRan, 0, "status 0", true},
		{report("state=present", "start.started=1", "exit.status=0", "exit.signal=", "lock=free"), journal.ResultRan, 0, "status 0", false},
		{report("state=present", "start.started=1", "exit.status=300", "lock=free"), journal.ResultInconclusive, 0, "bad status", false},
		{report("state=present", "start.started=1", "aborted.signal=HUP", "lock=free"), journal.ResultNotStarted, 0, "SIGHUP", false},
		{report("state=present", "fenced.at=1", "lock=free"), journal.ResultNotStarted, 0, "fenced", false},
		{report("state=present", "lock=held"), journal.ResultStillRunning, 0, "starting", false},
		{report("state=present", "start.started=1", "start.pid=4", "lock=held"), journal.ResultStillRunning, 0, "still running", false},
		{report("state=present", "start.started=1", "start.lock=pid", "start.boot_id=a", "boot_id_now=b", "lock=held"), journal.ResultInconclusive, 0, "rebooted", false},
		{report("state=present", "start.started=1", "start.boot_id=a", "boot_id_now=b", "lock=free"), journal.ResultInconclusive, 0, "rebooted", false},
		{report("state=present", "start.started=1", "lock=unknown"), journal.ResultInconclusive, 0, "cannot tell", false},
		{report("state=present", "lock=free"), journal.ResultInconclusive, 0, "no start record", false},
		{report("state=unavailable"), journal.ResultInconclusive, 0, "could not", false},
	}
	for i, c := range cases {
		r, err := ParseProbe(id, c.out, c.accepted)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if r.Result != c.result || !strings.Contains(r.Evidence, c.why) || !strings.Contains(r.Evidence, "state=") {
			t.Errorf("case %d: %s\n%s", i, r.Result, r.Evidence)
		}
		if c.result == journal.ResultRan && (r.ExitStatus == nil || *r.ExitStatus != c.status) {
			t.Errorf("case %d: exit status %v", i, r.ExitStatus)
		}
		if strings.Contains(r.Evidence, "Welcome") || strings.Contains(r.Evidence, "noise") {
			t.Errorf("case %d: evidence holds lines outside the report", i)
		}
	}
	for _, bad := range [][]byte{
		nil,
		[]byte("fish: Unknown command\n"),
		[]byte("postern-probe 1 " + id + "\nstate=present\n"),                                       // cut short
		[]byte("postern-probe 1 01M8N7K5YBNAXYX35XDKKVHY1R\nstate=fenced_now\npostern-probe end\n"), // another id
	} {
		if r, err := ParseProbe(id, bad, false); err == nil {
			t.Errorf("ParseProbe(%q) = %+v", bad, r)
		}
	}
}

func TestWrapRefuses(t *testing.T) {
	if _, err := Wrap("../x", []byte("ls")); err == nil {
		t.Error("Wrap accepted a bad id")
	}
	if _, err := Probe("$(reboot)"); err == nil {
		t.Error("Probe accepted a bad id")
	}
	if _, err := Wrap(journal.NewID(), []byte("echo a\x00b")); err == nil {
		t.Error("Wrap accepted a NUL byte")
	}
	if _, err := Wrap(journal.NewID(), bytes.Repeat([]byte("'"), 40<<10)); err == nil {
		t.Error("Wrap accepted a command too long to pass")
	}
	if _, err := Wrap(journal.NewID(), bytes.Repeat([]byte("x"), 100<<10)); err != nil {
		t.Errorf("Wrap refused 100 KiB: %v", err)
	}
	// The scripts travel inside one pair of single quotes.
	for name, s := range map[string]string{"wrapper": wrapScript, "probe": probeScript} {
		if strings.Contains(s, "'") {
			t.Errorf("the %s script contains a single quote", name)
		}
	}
}

// A signal that arrives before the command starts stops the wrapper
// before it runs anything, and says so.
func TestWrapAbortedBeforeStart(t *testing.T) {
	h := newHost(t)
	date, err := exec.LookPath("date")
	if err != nil {
		t.Fatal("date is not installed")
	}
	bin := filepath.Join(h.home, "bin")
	os.Mkdir(bin, 0o755)
	started := filepath.Join(h.home, "in-date")
	os.WriteFile(filepath.Join(bin, "date"), []byte("#!/bin/sh\n: > '"+started+"'\nsleep 5\nexec "+date+" \"$@\"\n"), 0o755)
	path := h.env[1]
	h.env[1] = "PATH=" + bin + ":" + os.Getenv("PATH")

	id := journal.NewID()
	side := filepath.Join(h.home, "side")
	c := h.command(id, []byte("touch '"+side+"'"), "/bin/sh")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h.waitFor(started) // the wrapper is recording the start
	syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
	c.Wait()
	if ws := c.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("wrapper ended %v", c.ProcessState)
	}
	if _, err := os.Stat(side); err == nil {
		t.Fatal("the command ran after the hangup")
	}
	h.env[1] = path
	res := h.probe(id)
	wantResult(t, res, journal.ResultNotStarted, 0)
	if !strings.Contains(res.Evidence, "SIGTERM before starting") {
		t.Errorf("evidence:\n%s", res.Evidence)
	}
}

// Without an absolute HOME there is no place for markers: the wrapper
// runs nothing, and the probe cannot tell (it never fences).
func TestMarkersNeedHome(t *testing.T) {
	h := newHost(t)
	for _, home := range []string{"", "relative/dir"} {
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SHELL=/bin/sh"}
		id := journal.NewID()
		side := filepath.Join(h.home, "side-effect")
		c := h.command(id, []byte("touch '"+side+"'"), "/bin/sh")
		c.Env, c.Dir = env, h.home
		var errb bytes.Buffer
		c.Stderr = &errb
		c.Run()
		if c.ProcessState.ExitCode() != ExitNotRun || !strings.Contains(errb.String(), "HOME") {
			t.Errorf("HOME=%q: wrapper exited %v: %s", home, c.ProcessState, errb.String())
		}
		if _, err := os.Stat(side); err == nil {
			t.Errorf("HOME=%q: the command ran", home)
		}
		p, _ := Probe(id)
		pc := exec.Command("/bin/sh", "-c", p)
		pc.Env, pc.Dir = env, h.home
		out, err := pc.Output()
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseProbe(id, out, false)
		if err != nil || r.Result != journal.ResultInconclusive {
			t.Errorf("HOME=%q: probe %s, %v\n%s", home, r.Result, err, out)
		}
	}
}
