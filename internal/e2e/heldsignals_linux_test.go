package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"
)

// A request that reaches the gateway after kill -USR1 returned finds
// every key gone, whatever the machine's load: the signal is taken
// before the request is answered, not when the Go runtime passes it on.
// The loop sends the request a few microseconds after the signal, where
// ssh-add, which OpenSSH's regress test runs, takes a millisecond.
func TestSIGUSR1BeforeTheNextRequest(t *testing.T) {
	_, a, _ := agentWithKey(t)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	list := func() int {
		c, err := net.Dial("unix", a.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		keys, err := agent.NewClient(c).List()
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	add, err := net.Dial("unix", a.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer add.Close()
	adder := agent.NewClient(add)
	const rounds = 300
	for i := range rounds {
		if err := adder.Add(agent.AddedKey{PrivateKey: priv, Comment: "again"}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Kill(a.cmd.Process.Pid, unix.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if n := list(); n != 0 {
			t.Fatalf("round %d of %d: the request after SIGUSR1 listed %d keys", i+1, rounds, n)
		}
	}
}

// usr1 is SIGUSR1's bit in a mask of /proc/PID/status.
const usr1 = uint64(1) << (unix.SIGUSR1 - 1)

// sigBlk reads the mask of blocked signals of process pid (its first
// thread's); the test fails where it cannot.
func sigBlk(t *testing.T, pid int) uint64 {
	t.Helper()
	return parseMask(t, statusField(pid, "SigBlk:"))
}

// personsMask is the mask the tests give what they start: that of a
// program they start, as the test process's own threads block every
// signal for a moment at each fork.
func personsMask(t *testing.T, e *Env) uint64 {
	t.Helper()
	return parseMask(t, e.MustRun("grep", "SigBlk", "/proc/self/status").Stdout)
}

func parseMask(t *testing.T, v string) uint64 {
	t.Helper()
	m, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "SigBlk:")), 16, 64)
	if err != nil {
		t.Fatalf("no signal mask in %q", v)
	}
	return m
}

// gatewayHolds checks that every thread of the gateway pid blocks
// SIGUSR1 and that ps shows it by its name (posternNamed).
func gatewayHolds(t *testing.T, pid int) {
	t.Helper()
	posternNamed(t, pid)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "SigBlk:") && parseMask(t, line)&usr1 == 0 {
				t.Errorf("thread %s of the gateway (pid %d) does not block SIGUSR1: %s", task.Name(), pid, strings.TrimSpace(line))
			}
		}
	}
}

// TestGatewayStartsProgramsWithThePersonsSignalMask: the gateway holds
// SIGUSR1 blocked in all its threads, in the foreground and detached;
// the programs it starts (the askpass program, postern agent's COMMAND)
// run with the mask the person gave the gateway, where the kernel would
// hand them its own: a bash COMMAND would pass SIGUSR1 blocked on to
// every program it runs. (A shell such as dash clears the mask itself:
// the programs here are awk and grep, which keep what they got.)
func TestGatewayStartsProgramsWithThePersonsSignalMask(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "awk", "grep")
	e := newEnv(t)
	person := personsMask(t, e)
	if person&usr1 != 0 {
		t.Fatal("the tests run with SIGUSR1 blocked")
	}
	e.Config(`approval = "none"`)
	seen := e.Path("askpass.seen")
	e.Setenv("SSH_ASKPASS", e.WriteFile("askpass", "#!/usr/bin/awk -f\n"+
		`BEGIN { while ((getline l < "/proc/self/status") > 0) if (l ~ /^SigBlk:/) print l >> "`+seen+`"; exit 1 }`+"\n", 0o755))
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	askpassMasks := func() []uint64 {
		var m []uint64
		for _, l := range strings.Split(strings.TrimSpace(string(mustRead(t, seen))), "\n") {
			m = append(m, parseMask(t, l))
		}
		return m
	}
	k := e.Keygen("k", "ed25519", 0, "")
	msg := e.WriteFile("m", "x", 0o600)

	// In the foreground, as the systemd unit runs it.
	a := e.StartAgent()
	gatewayHolds(t, a.PID())
	e.AddKey(k, "-c")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatalf("signed though the askpass program said no: %s", r)
	}
	if m := askpassMasks(); len(m) != 1 || m[0] != person {
		t.Errorf("the askpass program ran with the masks %x, want %x", m, person)
	}
	a.Stop()

	// With a command.
	r := e.MustRun("postern", "agent", "-a", e.Path("run", "cmd.sock"), "--", "grep", "SigBlk", "/proc/self/status")
	if m := parseMask(t, r.Stdout); m != person {
		t.Errorf("postern agent COMMAND: the command ran with the mask %x, want %x", m, person)
	}

	// Detached, as eval "$(postern agent)" starts it: the daemon knows
	// the mask it got came from postern, not from the person.
	p := e.startDetachedAgent(e.Path("run", "detached.sock"))
	gatewayHolds(t, p.Pid)
	e.Setenv("SSH_AUTH_SOCK", e.Path("run", "detached.sock"))
	k = e.Keygen("k2", "ed25519", 0, "")
	e.AddKey(k, "-c")
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatalf("the detached gateway signed though the askpass program said no: %s", r)
	}
	if m := askpassMasks(); len(m) != 2 || m[1] != person {
		t.Errorf("the detached gateway's askpass program ran with the masks %x, want %x", m, person)
	}
	// kill -USR1 reaches it as it reaches the gateway in the
	// foreground.
	if err := p.Signal(unix.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if r := e.Run("ssh-add", "-l"); r.Code != 1 || !strings.Contains(r.Stdout, "no identities") {
		t.Errorf("the detached gateway listed keys after SIGUSR1: %s", r)
	}
}

// The OpenSSH helper a token's keys are loaded into runs with the
// person's mask too.
func TestHelperRunsWithThePersonsSignalMask(t *testing.T) {
	need(t, "ssh-add")
	e := newEnv(t)
	person := personsMask(t, e)
	tokenNoCards(t, e)
	a := e.StartAgent()
	e.MustRun("ssh-add", "-s", softhsm)
	helpers := childrenNamed(a.PID(), "ssh-pkcs11-help")
	if len(helpers) != 1 {
		t.Fatalf("%d ssh-pkcs11-helper running for the gateway with the token's keys loaded, want 1", len(helpers))
	}
	if m := sigBlk(t, helpers[0]); m != person {
		t.Errorf("ssh-pkcs11-helper runs with the mask %x, want %x", m, person)
	}
}
