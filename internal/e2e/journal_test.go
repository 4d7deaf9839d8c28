package e2e

// The command journal through the command line: follow as a stream, and
// a damaged journal that the bastion refuses to use while the agent goes
// on signing.

import (
	"bufio"
	"encoding/json"
	"errors"
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
	for _, stop := range []string{"stopped", "killed"} {
		t.Run(stop, func(t *testing.T) {
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
