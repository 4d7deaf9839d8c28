package e2e

// The command journal through the command line: follow as a stream, and
// a damaged journal that the bastion refuses to use while the agent goes
// on signing.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// follow shows the commands still running, then each change as it
// happens, to the end of a long command; an empty list is [].
func TestJournalFollow(t *testing.T) {
	b := newBastionWorld(t, "")
	if out := b.e.MustRun("postern", "journal", "list", "--json").Stdout; out != "[]\n" {
		t.Fatalf("journal list --json of an empty journal: %q", out)
	}
	command := "sleep 2; exit 3"
	ran := make(chan Result, 1)
	go func() { ran <- b.ssh(command) }()
	b.waitRunning(command)
	id := b.entryFor(command).ID

	follow := b.e.Command("postern", "journal", "follow", "--json")
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer follow.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var statuses []string
	for lines.Scan() {
		var e entryJSON
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			t.Fatalf("follow --json: %v: %s", err, lines.Text())
		}
		if e.ID != id {
			continue
		}
		statuses = append(statuses, e.Status)
		if e.End != nil {
			if e.Status != "COMPLETED" || e.End.ExitStatus != 3 {
				t.Fatalf("the end as followed: %+v", e)
			}
			break
		}
	}
	if len(statuses) == 0 || statuses[0] != "RUNNING" {
		t.Fatalf("follow showed %v for the running command", statuses)
	}
	if r := <-ran; r.Code != 3 {
		t.Fatalf("the command: %s", r)
	}
	follow.Process.Signal(syscall.SIGINT)
	if err := follow.Wait(); err != nil {
		t.Fatalf("follow after an interrupt: %v", err)
	}
}

// A journal cut to nothing while the gateway was stopped: the gateway
// starts, the agent signs, the bastion refuses every command and says
// why, the file is kept, and only a person's "postern journal new" starts
// a new journal.
func TestDamagedJournalRefusedAgentSigns(t *testing.T) {
	need(t, "ssh-keygen")
	b := newBastionWorld(t, "")
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("a first command: %s", r)
	}
	b.agent.Stop()
	path := b.e.Path("state", "postern", "journal.db")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)

	msg := b.e.WriteFile("msg", "signed while the journal is damaged", 0o600)
	pub := b.e.WriteFile("agent-key.pub", pubKey(t, b.key)+"\n", 0o600)
	b.e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", pub, msg)

	r := b.ssh("echo must not run")
	if r.Code != 255 || !strings.Contains(r.Stderr, "damaged") || strings.Contains(r.Stdout, "must not run") {
		t.Fatalf("a command with a damaged journal: %s", r)
	}
	if st := b.e.MustRun("postern", "status").Stdout; !strings.Contains(st, "REFUSING") || !strings.Contains(st, "postern journal new") {
		t.Fatalf("status:\n%s", st)
	}
	l := b.e.Run("postern", "journal", "list")
	if l.Code != 1 || !strings.Contains(l.Stderr, "postern: hint: ") || !strings.Contains(l.Stderr, "postern journal new") {
		t.Fatalf("journal list: %s", l)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the damaged journal was not kept as it was: %v %v", fi, err)
	}
	out := b.e.MustRun("postern", "journal", "new").Stdout
	if !strings.Contains(out, path+".damaged-") {
		t.Fatalf("journal new: %s", out)
	}
	if r := b.ssh("echo runs again"); r.Code != 0 || !strings.Contains(r.Stdout, "runs again") {
		t.Fatalf("a command after the decision: %s", r)
	}
}

// follow ends with status 1 and says why when the gateway goes away
// under it, stopped or killed: a stream that ended is not an interrupt,
// and a script that follows must not read it as one.
func TestJournalFollowSaysWhenTheGatewayGoes(t *testing.T) {
	mostlyWaits(t)
	for _, stop := range []string{"stopped", "killed"} {
		t.Run(stop, func(t *testing.T) {
			mostlyWaits(t)
			b := newBastionWorld(t, "")
			command := "sleep 30"
			go b.ssh(command)
			b.waitRunning(command)
			follow := b.e.Command("postern", "journal", "follow")
			stdout, err := follow.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			follow.Stderr = &stderr
			if err := follow.Start(); err != nil {
				t.Fatal(err)
			}
			defer follow.Process.Kill()
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || !strings.Contains(lines.Text(), "RUNNING") {
				t.Fatalf("follow's first line: %q", lines.Text())
			}
			if stop == "killed" {
				b.agent.Kill()
			} else {
				b.agent.Stop()
			}
			for lines.Scan() {
			}
			err = follow.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "gateway") {
				t.Fatalf("follow when the gateway was %s: %v, stderr %q", stop, err, stderr.String())
			}
		})
	}
}

// "postern journal new" while a command started through the bastion
// runs is refused: the command records its end in the journal it started
// in, which stays open until it ends; then journal new starts a new one.
// A new journal under a running command lost its end and its retry
// guard.
func TestJournalNewWaitsForRunningCommands(t *testing.T) {
	b := newBastionWorld(t, "")
	command := "read line; echo got $line; exit 3"
	cmd := b.e.Command(b.sshd.OpenSSH.SSH, b.sshArgs(b.sshd.Port, command)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.waitRunning(command)
	scramble(t, b.e.Path("state", "postern", "journal.db"))
	b.e.Run("postern", "journal", "list") // meets the damage
	r := b.e.Run("postern", "journal", "new")
	if r.Code != 1 || !strings.Contains(r.Stderr, "1 command") || !strings.Contains(r.Stderr, "running") {
		t.Fatalf("journal new while a command runs: %s", r)
	}
	io.WriteString(stdin, "done\n")
	stdin.Close()
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 3 || !strings.Contains(out.String(), "got done") {
		t.Fatalf("the running command after journal new was refused: %v %q", err, out.String())
	}
	out2 := b.e.MustRun("postern", "journal", "new").Stdout
	if !strings.Contains(out2, ".damaged-") {
		t.Fatalf("journal new once the command ended: %s", out2)
	}
}

// scramble overwrites every page of the bbolt file at path past its two
// meta pages, under the gateway that holds it.
func scramble(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	for i := 2 * page; i < len(b); i++ {
		b[i] = byte(i*7 + 3)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b[2*page:], int64(2*page)); err != nil {
		t.Fatal(err)
	}
}
