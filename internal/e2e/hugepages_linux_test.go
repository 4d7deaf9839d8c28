package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// thpEnabled reads whether transparent huge pages are on for process pid
// (0 once prctl PR_SET_THP_DISABLE turned them off); "" where it cannot
// be read.
func thpEnabled(pid int) string { return statusField(pid, "THP_enabled:") }

// posternTHP reads THP_enabled of postern's process pid and checks that
// ps shows it by its name (posternNamed).
func posternTHP(t *testing.T, pid int) string {
	t.Helper()
	posternNamed(t, pid)
	return thpEnabled(pid)
}

// posternNamed checks that ps shows postern's process pid by its name,
// which starting itself again would have made "exe".
func posternNamed(t *testing.T, pid int) {
	t.Helper()
	if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(b) != "postern\n" {
		t.Errorf("process %d of postern is named %q", pid, b)
	}
}

// TestGatewayRunsWithoutHugePages: the gateway keeps transparent huge
// pages off however it is started (its idle memory is
// BenchmarkIdleMemory's), but while an unlock derives its key, whose
// fresh memory they fault in fast; the person's programs it starts, the
// askpass program and postern agent's COMMAND, have them as they would
// have had them. So does the approver's console, open as long.
func TestGatewayRunsWithoutHugePages(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	hugePagesOn(t)
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	seen := e.Path("askpass.seen")
	e.Setenv("SSH_ASKPASS", e.WriteFile("askpass", "#!/bin/sh\ngrep THP_enabled /proc/$$/status >> "+seen+"\nexit 1\n", 0o755))
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")

	// In the foreground, as the systemd unit runs it.
	a := e.StartAgent()
	if v := posternTHP(t, a.PID()); v != "0" {
		t.Errorf("the gateway runs with THP_enabled %q", v)
	}
	if v := posternTHP(t, e.StartConsole().cmd.Process.Pid); v != "0" {
		t.Errorf("the console runs with THP_enabled %q", v)
	}
	// The unlock turns them on while it derives the key, and off after.
	if !onDuring(a.PID(), func() { e.MustRun("postern", "unlock", "--passphrase-file", pass) }) {
		t.Error("huge pages stayed off while the unlock derived its key")
	}
	if v := thpEnabled(a.PID()); v != "0" {
		t.Errorf("after an unlock the gateway runs with THP_enabled %q", v)
	}
	// The askpass program, asked to confirm a key added with -c.
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k, "-c")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", e.WriteFile("m", "x", 0o600)); r.Code == 0 {
		t.Fatalf("signed though the askpass program said no: %s", r)
	}
	if got := strings.Fields(string(mustRead(t, seen))); strings.Join(got, " ") != "THP_enabled: 1" {
		t.Errorf("the askpass program ran with %q", got)
	}
	a.Stop()

	// With a command: the gateway has them off, the command on.
	r := e.MustRun("postern", "agent", "-a", e.Path("run", "cmd.sock"), "--", "sh", "-c",
		`cat /proc/$SSH_AGENT_PID/comm; grep THP_enabled /proc/$SSH_AGENT_PID/status; grep THP_enabled /proc/$$/status`)
	if got := strings.Fields(r.Stdout); strings.Join(got, " ") != "postern THP_enabled: 0 THP_enabled: 1" {
		t.Errorf("postern agent COMMAND: the gateway's name and THP_enabled, and the command's THP_enabled, are %q", got)
	}

	// A person who turned them off for the whole session (a parent's
	// prctl) keeps them off in what the gateway starts.
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0) })
	r = e.MustRun("postern", "agent", "-a", e.Path("run", "person.sock"), "--", "sh", "-c", `grep THP_enabled /proc/$$/status`)
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(r.Stdout), " "); got != "THP_enabled: 0" {
		t.Errorf("postern agent COMMAND, started with huge pages off: the command's THP_enabled is %q", got)
	}

	// Detached, as eval "$(postern agent)" starts it.
	p := e.startDetachedAgent(e.Path("run", "detached.sock"))
	pid := p.Pid
	if v := posternTHP(t, pid); v != "0" {
		t.Errorf("the detached gateway runs with THP_enabled %q", v)
	}
	// It turns them on as the gateway in the foreground does, and its
	// askpass program gets them as the person had them: the daemon knows
	// its setting came from postern, not from the person.
	e.Setenv("SSH_AUTH_SOCK", e.Path("run", "detached.sock"))
	if !onDuring(pid, func() { e.MustRun("postern", "unlock", "--passphrase-file", pass) }) {
		t.Error("huge pages stayed off while the detached gateway's unlock derived its key")
	}
	k = e.Keygen("k2", "ed25519", 0, "")
	e.AddKey(k, "-c")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", e.Path("m")); r.Code == 0 {
		t.Fatalf("the detached gateway signed though the askpass program said no: %s", r)
	}
	if got := strings.Fields(string(mustRead(t, seen))); strings.Join(got, " ") != "THP_enabled: 1 THP_enabled: 1" {
		t.Errorf("the askpass programs of the gateway in the foreground and of the detached one ran with %q", got)
	}
}

// hugePagesOn turns transparent huge pages on for the tests, whatever
// the process that started them set, so that what postern starts would
// have had them on.
func hugePagesOn(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0); err != nil || thpEnabled(os.Getpid()) != "1" {
		t.Fatalf("cannot turn transparent huge pages on for the tests (THP_enabled %q, %v): a kernel without them?", thpEnabled(os.Getpid()), err)
	}
}

// TestRunRunsWithoutHugePages: postern run, open as long as its run, and
// the helper of a confined run (the first process of its namespaces)
// keep transparent huge pages off, as the gateway does; the run's
// program has them as it would have had them, confined or not: on, or
// off where the person turned them off for what it starts.
func TestRunRunsWithoutHugePages(t *testing.T) {
	hugePagesOn(t)
	for _, c := range []struct {
		opts   []string
		person bool
	}{{nil, false}, {[]string{"--no-sandbox"}, false}, {nil, true}, {[]string{"--no-sandbox"}, true}} {
		t.Run(fmt.Sprintf("opts=%v,off-by-person=%v", c.opts, c.person), func(t *testing.T) {
			want := "1"
			if c.person {
				want = "0"
				if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0) })
			}
			e := newEnv(t)
			e.Config("") // the [run] section the tests' confined runs need
			e.StartAgent()
			d := e.StartRunWith("", c.opts...)
			defer d.Stop()
			if c.person {
				// Only the run's processes start with the person's
				// setting.
				unix.Prctl(unix.PR_SET_THP_DISABLE, 0, 0, 0, 0)
			}
			launcher := d.cmd.Process.Pid
			if v := posternTHP(t, launcher); v != "0" {
				t.Errorf("postern run runs with THP_enabled %q", v)
			}
			parent, _ := strconv.Atoi(statusField(d.PID(), "PPid:"))
			switch confined := c.opts == nil; {
			case confined && parent == launcher:
				t.Fatalf("the confined run's program %d is a child of postern run, not of its helper", d.PID())
			case confined:
				if v := posternTHP(t, parent); v != "0" {
					t.Errorf("the run's helper (pid %d) runs with THP_enabled %q", parent, v)
				}
			case parent != launcher:
				t.Fatalf("the unconfined run's program %d is a child of %d, not of postern run", d.PID(), parent)
			}
			if v := thpEnabled(d.PID()); v != want {
				t.Errorf("the run's program runs with THP_enabled %q, want %q", v, want)
			}
		})
	}
}

// onDuring reports whether huge pages were on for the process pid at
// some moment while do ran (polled every millisecond).
func onDuring(pid int, do func()) bool {
	var on atomic.Bool
	polled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			if thpEnabled(pid) == "1" {
				on.Store(true)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	do()
	close(stop)
	<-polled
	return on.Load()
}
