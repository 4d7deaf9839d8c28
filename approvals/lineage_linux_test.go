package approvals

// A request covered by a grant does not read its run's /proc/PID/stat: a
// run process that is pinned and alive vouches for its pid (see
// procid.Peer.LineageVia). These tests attack that shortcut with real
// processes: a run that exec'd another program under the same
// interpreter, and a run's pid taken by a new process after it exited.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/knownhosts"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

// hostWorld is an engine over the real process table.
type hostWorld struct {
	t *testing.T
	e *Engine
}

func newHostWorld(t *testing.T) *hostWorld {
	e := NewEngine(Config{
		Procs: procid.Host, Log: slog.New(slog.DiscardHandler), BootID: "b", Vault: func() (bool, uint64) { return false, 1 },
		Policy: &Policy{Mode: audit.ModeSession, CardTimeout: time.Minute, Hosts: knownhosts.Open(nil), Scope: ScopeKey},
	})
	return &hostWorld{t: t, e: e}
}

// start starts a bash script in dir, in a process group of its own that
// the test kills at its end.
func (w *hostWorld) start(dir, script string) *exec.Cmd {
	w.t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { killGroup(cmd); cmd.Wait() })
	return cmd
}

// killGroup kills the process group cmd leads, unless cmd was reaped
// (waited for): its pid, the group's id, may then be another process's,
// and tests run as root beside others (pids wrap at kernel.pid_max,
// startAt hands them out again on purpose), so the kill would reach a
// stranger's group: the process of another test's sshd connection (sshd
// makes each a group leader), for one.
func killGroup(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// childOf waits for the child of pid that runs exe (by its comm), and
// pins it. The test kills it at its end, through a pidfd: a child its
// parent left to another is in no group the test kills.
func (w *hostWorld) childOf(pid int, comm string) *procid.Peer {
	w.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, f := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(f)
			if got, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(got)) == comm {
				proctest.WaitSleeping(w.t, c, comm)
				p, err := procid.Host.Pin(c)
				if err != nil {
					w.t.Fatal(err)
				}
				w.t.Cleanup(func() { p.Close() })
				if fd, err := unix.PidfdOpen(c, 0); err == nil {
					w.t.Cleanup(func() {
						unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
						unix.Close(fd)
					})
				}
				return p
			}
		}
	}
	w.t.Fatalf("pid %d started no %s", pid, comm)
	return nil
}

func (w *hostWorld) req(p *procid.Peer) *Request {
	return &Request{Requester: p, Channel: Channel{Kind: ChannelAgent}, Key: Key{Fingerprint: "SHA256:k"}, Purpose: PurposeSSHSig, Namespace: "git"}
}

// card waits for a pending card for the requester at pid.
func (w *hostWorld) card(pid int) CardView {
	w.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		cards, _ := w.e.Cards()
		for _, c := range cards {
			if len(c.Requester) > 0 && c.Requester[0].PID == pid {
				return c
			}
		}
	}
	w.t.Fatalf("no card for pid %d", pid)
	return CardView{}
}

// approveRun decides requester's request, approves its card for a
// session bound to the run at pid, and checks the next request rides it.
func (w *hostWorld) approveRun(requester *procid.Peer, run int) {
	w.t.Helper()
	ch := make(chan Decision, 1)
	go func() { ch <- w.e.Decide(context.Background(), w.req(requester)) }()
	c := w.card(requester.PID)
	subject := -1
	for i, s := range c.Subjects {
		if s.PID == run {
			subject = i
		}
	}
	if subject < 0 {
		w.t.Fatalf("pid %d is not among the card's subjects: %+v", run, c.Subjects)
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: subject, Approver: "test"}, nil); err != nil {
		w.t.Fatal(err)
	}
	if d := <-ch; !d.Allow {
		w.t.Fatalf("approved: %+v", d)
	}
	if d := w.e.Decide(context.Background(), w.req(requester)); d.Reason != audit.ReasonSession {
		w.t.Fatalf("the grant does not cover the run's child: %+v", d)
	}
}

// notCovered checks that requester's request is not covered by a grant:
// it puts up a card (which the test denies), whose reason is returned.
func (w *hostWorld) notCovered(requester *procid.Peer) CardView {
	w.t.Helper()
	ch := make(chan Decision, 1)
	go func() { ch <- w.e.Decide(context.Background(), w.req(requester)) }()
	var c CardView
	for c.ID == "" {
		select {
		case d := <-ch:
			w.t.Fatalf("decided without a card: %+v", d)
		case <-time.After(2 * time.Millisecond):
		}
		if cards, _ := w.e.Cards(); len(cards) > 0 && cards[0].Requester[0].PID == requester.PID {
			c = cards[0]
		}
	}
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictDeny, Approver: "test"}, nil); err != nil {
		w.t.Fatal(err)
	}
	if d := <-ch; d.Allow {
		w.t.Fatalf("a denied card allowed: %+v", d)
	}
	return c
}

// A run that exec'd another script under the same interpreter (exec -a)
// keeps its pid, start time and executable, and its pidfd still shows it
// alive: the shortcut vouches for its pid, and the grant's own check of
// the run still ends it as process_changed.
func TestShortcutRunThatExecdEndsItsGrant(t *testing.T) {
	w := newHostWorld(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "other.sh"), []byte("sleep 600\n:\n"), 0o644)
	run := w.start(dir, `sleep 600 & read x < go; exec -a innocent bash other.sh`)
	requester := w.childOf(run.Process.Pid, "sleep")
	w.approveRun(requester, run.Process.Pid)

	// The run execs; its first sleep, the requester, is still its child.
	f, err := os.OpenFile(filepath.Join(dir, "go"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", run.Process.Pid))
		if strings.HasPrefix(string(b), "innocent\x00") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, err := procid.Host.Stat(requester.PID); err != nil || st.PPID != run.Process.Pid {
		t.Fatalf("the requester's parent after the exec: %+v %v", st, err)
	}
	c := w.notCovered(requester)
	if c.Reason != audit.ReasonReauthProcessChanged {
		t.Fatalf("the card after the exec: %s, want %s", c.Reason, audit.ReasonReauthProcessChanged)
	}
	if _, grants := w.e.Sessions(); len(grants) != 0 {
		t.Fatalf("the grant survived the exec: %+v", grants)
	}
}

// A run exits and a new process takes its pid (forced through
// ns_last_pid, as root): a child of the new process names the run's pid
// as its parent, and the run's grant must not cover it. The shortcut
// vouches only for a run whose pidfd shows it alive.
func TestShortcutReusedRunPidCoversNothing(t *testing.T) {
	w := newHostWorld(t)
	dir := t.TempDir()
	// On a busy machine another process may take the pid first: then the
	// scene is played again with a new run.
	for scene := 0; scene < 50; scene++ {
		run := w.start(dir, `sleep 600 & wait`)
		pid := run.Process.Pid
		w.approveRun(w.childOf(pid, "sleep"), pid)
		killGroup(run)
		run.Wait()
		again := w.startAt(dir, `sleep 600 & wait`, pid)
		if again == nil {
			continue
		}
		requester := w.childOf(pid, "sleep")
		// A card, not the grant: a first approval, or a re-approval
		// that names the change at the run's pid (process_changed), as
		// a busy machine has shown it.
		if c := w.notCovered(requester); c.Reason != audit.ReasonCardNew && c.Reason != audit.ReasonReauthProcessChanged {
			t.Fatalf("the card for the new process's child: %s", c.Reason)
		}
		return
	}
	t.Fatal("no run's pid could be handed out again")
}

// startAt starts a bash script as pid, free since its process was
// reaped, by setting the last pid handed out just below it (which takes
// root); nil when another process takes it first.
func (w *hostWorld) startAt(dir, script string, pid int) *exec.Cmd {
	w.t.Helper()
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			return nil // taken
		}
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			w.t.Fatalf("forcing a pid needs root: %v", err)
		}
		cmd := w.start(dir, script)
		if cmd.Process.Pid == pid {
			return cmd
		}
		killGroup(cmd)
		cmd.Wait()
	}
	return nil
}

// A card shows the requester's ancestry as it is at the request, read
// from live processes: a requester whose parent exited since its
// connection was identified has been given another parent by the
// kernel, and its next card names that one, never the parent it had.
func TestCardShowsTheParentARequesterWasGiven(t *testing.T) {
	w := newHostWorld(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	mid := w.start(dir, `sleep 600 & read x < go`)
	requester := w.childOf(mid.Process.Pid, "sleep")
	before := w.notCovered(requester)
	if len(before.Requester) < 2 || before.Requester[1].PID != mid.Process.Pid {
		t.Fatalf("the first card's chain: %+v, want the requester's parent %d second", before.Requester, mid.Process.Pid)
	}

	// The parent exits; the kernel gives the requester another parent.
	release(t, dir)
	mid.Wait()
	st, err := procid.Host.Stat(requester.PID)
	if err != nil || st.PPID == mid.Process.Pid {
		t.Fatalf("the requester after its parent exited: %+v %v", st, err)
	}
	after := w.notCovered(requester)
	if len(after.Requester) < 2 || after.Requester[1].PID != st.PPID {
		t.Fatalf("the card after the parent exited shows %+v, want the requester's new parent %d second", after.Requester, st.PPID)
	}
	shown := after.Requester
	for _, s := range after.Subjects {
		shown = append(shown, s.ProcessView)
	}
	for _, p := range shown {
		if p.PID == mid.Process.Pid {
			t.Fatalf("the card names the parent that exited (pid %d): %+v", p.PID, after)
		}
	}
}

// An ancestor that executes another program between two requests shows
// on the next card with the program it runs then.
func TestCardShowsTheProgramAnAncestorExecuted(t *testing.T) {
	w := newHostWorld(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	mid := w.start(dir, `sleep 600 & read x < go; exec -a bash sleep 601`)
	requester := w.childOf(mid.Process.Pid, "sleep")
	before := w.notCovered(requester)
	if len(before.Requester) < 2 || before.Requester[1].Name != "bash" {
		t.Fatalf("the first card's chain: %+v, want bash second", before.Requester)
	}
	release(t, dir)
	for {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", mid.Process.Pid)); filepath.Base(exe) == "sleep" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	after := w.notCovered(requester)
	if len(after.Requester) < 2 || after.Requester[1].PID != mid.Process.Pid || after.Requester[1].Name != "sleep" ||
		after.Requester[1].SHA256 == before.Requester[1].SHA256 {
		t.Fatalf("the card after the parent executed sleep shows %+v (before: %+v)", after.Requester, before.Requester)
	}
}

// release opens the fifo "go" in dir for writing and writes a line: the
// script reading it goes on.
func release(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "go"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
}
