package approvals

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/procid"
)

// A process that does not show its program (not dumpable: it executes a
// file its user may not read) shows nothing of an exec either, when it
// executes another such file: the same pid, start time and pidfd, no
// executable, no layout, no address space to hold. A session bound to it
// could not end at its exec, so none is: if it is offered on a card at
// all, a session answer for it does not cover the request made after it
// executed another program.
func TestHiddenProgramIsNeverBoundToASession(t *testing.T) {
	if os.Getuid() == 0 {
		asNobody(t) // root sees every program
		return
	}
	w := newHostWorld(t)
	dir := t.TempDir()
	for _, c := range []struct{ from, to string }{{"/bin/bash", "runner"}, {"/bin/sleep", "other"}} {
		copyExecOnly(t, c.from, filepath.Join(dir, c.to))
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "runner"), "-c", "sleep 600 & read x < go; exec ./other 600")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); cmd.Wait() })
	requester := w.childOf(cmd.Process.Pid, "sleep")
	if p, err := procid.Host.Pin(cmd.Process.Pid); err != nil || !p.Exe.Hidden {
		t.Fatalf("the run shows its program (%+v, %v): nothing to test", p, err)
	}

	// Asked through the agent's socket, with the run among the
	// requester's ancestors, and through the run's own socket, the run
	// launched as postern run launches it: a session answer binds the run
	// where it is offered.
	caller, err := procid.Host.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	launched := w.e.PrepareRun("coder", caller.Process, func(id string) string { return "/sock." + id })
	if _, err := w.e.StartRun(launched.ID, cmd.Process.Pid, caller, confine.Level{}); err != nil {
		t.Fatal(err)
	}
	viaRun := func() *Request {
		r := w.req(requester)
		r.Channel = Channel{Kind: ChannelRun, Run: launched.ID}
		return r
	}
	for _, r := range []*Request{w.req(requester), viaRun()} {
		ch := make(chan Decision, 1)
		go func() { ch <- w.e.Decide(context.Background(), r) }()
		var c CardView
		decided := false
		for c.ID == "" && !decided {
			select {
			case <-ch:
				decided = true // covered by the session answered before
			case <-time.After(2 * time.Millisecond):
			}
			if cards, _ := w.e.Cards(); len(cards) > 0 {
				c = cards[0]
			}
		}
		if decided {
			continue
		}
		v := Answer{Verdict: VerdictDeny, Approver: "test"}
		for i, s := range c.Subjects {
			if s.PID == cmd.Process.Pid {
				v = Answer{Verdict: VerdictSession, Subject: i, Approver: "test"}
				if !c.OffersSession() {
					v.Subject = -1 // a card that offers no session binds no subject
				}
			}
		}
		if err := w.e.Answer(c.ID, v, nil); err != nil {
			t.Fatal(err)
		}
		<-ch
	}

	f, err := os.OpenFile(filepath.Join(dir, "go"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + itoa(cmd.Process.Pid) + "/comm"); strings.TrimSpace(string(b)) == "other" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not execute the other program")
		}
	}
	for _, r := range []*Request{w.req(requester), viaRun()} {
		ch := make(chan Decision, 1)
		go func() { ch <- w.e.Decide(context.Background(), r) }()
		select {
		case d := <-ch:
			if d.Reason == audit.ReasonSession {
				t.Fatalf("pid %d executed another program, and the session approved for the program before covers its child (through the %s socket): %+v", cmd.Process.Pid, r.Channel.Kind, d)
			}
		case <-time.After(time.Second):
			// A card: not covered.
		}
	}
}

// asNobody runs the calling test again in a copy of the test binary as
// user nobody, and fails with its output when it fails.
func asNobody(t *testing.T) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "approvals.test")
	copyFile(t, self, bin, 0o755)
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as user nobody: %v\n%s", err, out)
	}
	t.Logf("as user nobody:\n%s", out)
}

// copyExecOnly copies the program at from to to, executable and not
// readable by anyone.
func copyExecOnly(t *testing.T, from, to string) { copyFile(t, from, to, 0o111) }

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, mode); err != nil {
		t.Fatal(err)
	}
}
