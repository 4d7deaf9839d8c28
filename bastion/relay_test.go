package bastion

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
)

// run runs command through the bastion on a fresh connection and returns
// its stdout, its stderr and Wait's error.
func (w *world) run(command string, stdin []byte) (string, string, error) {
	w.t.Helper()
	sess, err := w.dial().NewSession()
	if err != nil {
		w.t.Fatal(err)
	}
	defer sess.Close()
	var out, errOut bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errOut
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	err = sess.Run(command)
	return out.String(), errOut.String(), err
}

// startRunning starts command on a host that runs it until the
// connection ends, and returns once the command is running.
func (w *world) startRunning(command string, stderr io.Writer) *ssh.Session {
	w.t.Helper()
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "started\n")
			for range s.reqs {
			}
		}
	})
	sess, err := w.dial().NewSession()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, _ := sess.StdoutPipe()
	sess.Stderr = stderr
	if err := sess.Start(command); err != nil {
		w.t.Fatal(err)
	}
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); l != "started\n" {
		w.t.Fatalf("read %q", l)
	}
	return sess
}

func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *ssh.ExitError
	if err == nil {
		return 0
	}
	if !errors.As(err, &ee) {
		t.Fatalf("no exit status: %v", err)
	}
	return ee.ExitStatus()
}

func wantEvents(t *testing.T, r *testRecorder, want ...string) {
	t.Helper()
	if got := r.types(); !slices.Equal(got, want) {
		t.Fatalf("audit events %q, want %q", got, want)
	}
}

// A command reaches the host byte for byte; its stdout and stderr come
// back apart, then its exit status; the journal holds the verified host
// key, the approval, the status and the byte counts, and the decision
// was asked about this command on this host before anything was signed.
func TestRelayExec(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "to stdout\n")
			io.WriteString(s.ch.Stderr(), "to stderr\n")
			s.exit(3)
		}
	})
	command := "printf '%s\\n' \"$HOME\" `id` \n\xff; exit 3"
	out, errOut, err := w.run(command, nil)
	if st := exitStatus(t, err); st != 3 || out != "to stdout\n" || errOut != "to stderr\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errOut)
	}
	seen := w.host.seen()
	if len(seen) != 1 || seen[0].Kind != "exec" || seen[0].Command != command {
		t.Fatalf("the host saw %+v", seen)
	}

	e := w.only()
	hostKey := ssh.FingerprintSHA256(w.host.key.PublicKey())
	switch {
	case e.Status() != journal.StatusCompleted || e.End.Outcome != journal.OutcomeExited || e.End.ExitStatus != 3:
		t.Fatalf("journal: %s %+v", e.Status(), e.End)
	case string(e.Command) != command || e.Kind != journal.KindExec || e.Marker || e.PTY:
		t.Fatalf("journal entry: %+v", e)
	case e.Target.HostKey != hostKey || e.Target.User != "alice" || e.Target.Port != w.host.port():
		t.Fatalf("journal target %+v, want host key %s", e.Target, hostKey)
	case e.Approval != "approved_once card-1" || e.Run != "run-1":
		t.Fatalf("journal approval %q run %q", e.Approval, e.Run)
	case e.End.BytesOut != 10 || e.End.BytesErr != 10 || e.End.BytesIn != 0 || e.End.ClientGone:
		t.Fatalf("journal counts %+v", e.End)
	case string(e.End.OutputTail) != "to stdout\nto stderr\n" && string(e.End.OutputTail) != "to stderr\nto stdout\n":
		t.Fatalf("journal output tail %q", e.End.OutputTail) // both streams, in either order
	case e.Dispatched.IsZero() || e.Requester == "" || e.RequesterPID == 0:
		t.Fatalf("journal entry: %+v", e)
	}
	wantEvents(t, w.audit, "command_started", "command_ended")

	reqs := w.decider.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d decisions asked, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Action != approvals.ActionSign || r.Relay != approvals.RelayExec || string(r.Command) != command || r.Dest == nil ||
		r.Dest.HostKey == nil || ssh.FingerprintSHA256(r.Dest.HostKey) != hostKey || r.Dest.User != "alice" ||
		r.Channel.Kind != "bastion" || r.Requester == nil {
		t.Fatalf("decision asked about %+v", r)
	}
}

// A command killed by a signal is reported as the signal, to the client
// and in the journal.
func TestRelayExitSignal(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "partial")
			s.killed("SEGV", true, "boom")
		}
	})
	out, _, err := w.run("crash", nil)
	var ee *ssh.ExitError
	if !errors.As(err, &ee) || ee.Signal() != "SEGV" || ee.Msg() != "boom" || out != "partial" {
		t.Fatalf("err %v, stdout %q", err, out)
	}
	e := w.only()
	if e.End.Outcome != journal.OutcomeSignaled || e.End.Signal != "SEGV" || !e.End.CoreDumped || e.End.ErrorMsg != "boom" || e.Status() != journal.StatusCompleted {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
}

// A host that reports a status and then a signal (or a signal, then a
// status) is recorded as the client is told: by its last report, which
// the relay passes on. The journal kept the status while ssh was told of
// the signal.
func TestRelayRecordsTheEndTheClientIsTold(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			s.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ S uint32 }{0}))
			s.killed("KILL", false, "")
		}
	})
	_, _, err := w.run("deploy", nil)
	var ee *ssh.ExitError
	if !errors.As(err, &ee) || ee.Signal() != "KILL" {
		t.Fatalf("err %v, want the signal KILL", err)
	}
	if e := w.only(); e.End.Outcome != journal.OutcomeSignaled || e.End.Signal != "KILL" {
		t.Fatalf("the client was told of SIGKILL; the journal says %+v", e.End)
	}
}

// stdin's EOF is a half-close: the host reads to the end of stdin and
// still writes, and its output and status come back.
func TestRelayStdinEOF(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			in, err := io.ReadAll(s.ch)
			if err != nil {
				s.exit(1)
				return
			}
			fmt.Fprintf(s.ch, "read %d bytes: %s|after EOF", len(in), in)
			s.exit(0)
		}
	})
	out, _, err := w.run("cat", []byte("some input"))
	if exitStatus(t, err) != 0 || out != "read 10 bytes: some input|after EOF" {
		t.Fatalf("err %v, stdout %q", err, out)
	}
	if e := w.only(); e.End.BytesIn != 10 || e.End.BytesOut != int64(len(out)) {
		t.Fatalf("journal counts %+v", e.End)
	}
}

// The journal counts the bytes sent to a command that ends before its
// stdin does, as most do: an interactive client keeps stdin open until
// it learns the exit status.
func TestRelayCountsStdinOfACommandThatEndsFirst(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			buf := make([]byte, 5)
			if _, err := io.ReadFull(s.ch, buf); err != nil {
				s.exit(1)
				return
			}
			s.exit(0)
		}
	})
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := sess.StdinPipe()
	if err := sess.Start("head -c 5"); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "12345")
	if err := sess.Wait(); err != nil {
		t.Fatal(err)
	}
	if e := w.only(); e.End.BytesIn != 5 {
		t.Fatalf("journal: %d bytes in, want 5", e.End.BytesIn)
	}
}

// All the output the host wrote before it ended reaches the client, even
// when the host closes the channel at once.
func TestRelayDrainsOutputBeforeTheEnd(t *testing.T) {
	w := newWorld(t)
	burst := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			s.ch.Write(burst)
			s.ch.Stderr().Write(burst[:1000])
			s.exit(0)
		}
	})
	out, errOut, err := w.run("burst", nil)
	if err != nil || out != string(burst) || errOut != string(burst[:1000]) {
		t.Fatalf("err %v, %d bytes out, %d bytes err", err, len(out), len(errOut))
	}
}

// A terminal, its size changes, environment variables and signals reach
// the host as the client sent them; agent forwarding does not.
func TestRelayTerminal(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			for req := range s.reqs {
				switch req.Type {
				case "window-change":
					var wc windowChange
					ssh.Unmarshal(req.Payload, &wc)
					fmt.Fprintf(s.ch, "winch %dx%d %dx%d\n", wc.Columns, wc.Rows, wc.Width, wc.Height)
				case "signal":
					var sig struct{ Name string }
					ssh.Unmarshal(req.Payload, &sig)
					fmt.Fprintf(s.ch, "signal %s\n", sig.Name)
					s.killed(sig.Name, false, "")
					return
				default:
					fmt.Fprintf(s.ch, "request %s\n", req.Type)
				}
				if req.WantReply {
					req.Reply(true, nil)
				}
			}
		}
	})
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Setenv("LC_POSTERN", "en_US.UTF-8"); err != nil {
		t.Fatal(err)
	}
	// Only the locale: BASH_ENV would run a file of the client's choice
	// before the command the card showed.
	if err := sess.Setenv("BASH_ENV", "/tmp/x"); err == nil {
		t.Error("BASH_ENV was accepted")
	}
	modes := ssh.TerminalModes{ssh.ECHO: 0, ssh.TTY_OP_ISPEED: 38400}
	if err := sess.RequestPty("xterm-256color", 40, 100, modes); err != nil {
		t.Fatal(err)
	}
	if ok, _ := sess.SendRequest("auth-agent-req@openssh.com", true, nil); ok {
		t.Error("agent forwarding accepted")
	}
	stdout, _ := sess.StdoutPipe()
	lines := bufio.NewReader(stdout)
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := sess.WindowChange(50, 120); err != nil {
		t.Fatal(err)
	}
	if l, _ := lines.ReadString('\n'); l != "winch 120x50 960x400\n" {
		t.Fatalf("host wrote %q", l)
	}
	if ok, _ := sess.SendRequest("auth-agent-req@openssh.com", true, nil); ok {
		t.Error("agent forwarding accepted after the shell started")
	}
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l, _ := lines.ReadString('\n'); l != "signal TERM\n" {
		t.Fatalf("host wrote %q", l)
	}
	var ee *ssh.ExitError
	if err := sess.Wait(); !errors.As(err, &ee) || ee.Signal() != "TERM" {
		t.Fatalf("Wait: %v", err)
	}

	s := w.host.seen()[0]
	if s.Kind != "shell" || s.PTY == nil || s.PTY.Term != "xterm-256color" || s.PTY.Columns != 100 || s.PTY.Rows != 40 ||
		s.PTY.Width != 800 || s.PTY.Height != 320 || s.Env["LC_POSTERN"] != "en_US.UTF-8" || len(s.Env) != 1 {
		t.Fatalf("the host saw %+v, pty %+v", s, s.PTY)
	}
	if got := parseModes(t, s.PTY.Modes); len(got) != 2 || got[ssh.ECHO] != 0 || got[ssh.TTY_OP_ISPEED] != 38400 {
		t.Fatalf("terminal modes %v", got)
	}
	e := w.only()
	if e.Kind != journal.KindShell || !e.PTY || len(e.Command) != 0 || e.End.Outcome != journal.OutcomeSignaled {
		t.Fatalf("journal %+v %+v", e, e.End)
	}
	if r := w.decider.requests()[0]; r.Relay != approvals.RelayShell || !r.Terminal || len(r.Command) != 0 {
		t.Fatalf("asked about %s %q, terminal %v", r.Relay, r.Command, r.Terminal)
	}
}

// parseModes reads RFC 4254's encoded terminal modes.
func parseModes(t *testing.T, b string) map[uint8]uint32 {
	t.Helper()
	m := map[uint8]uint32{}
	for len(b) > 0 && b[0] != 0 {
		if len(b) < 5 {
			t.Fatalf("terminal modes cut short: %x", b)
		}
		m[b[0]] = uint32(b[1])<<24 | uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(b[4])
		b = b[5:]
	}
	return m
}

// A subsystem (sftp) is a byte stream both ways, journaled and approved
// under its name.
func TestRelaySubsystem(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = (*hostSession).echo })
	// A raw channel, as sftp clients use: x/crypto's Session does not
	// wait for a subsystem's status.
	ch, reqs, err := w.dial().OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	status := make(chan uint32, 1)
	go func() {
		for r := range reqs {
			var m struct{ S uint32 }
			if r.Type == "exit-status" && ssh.Unmarshal(r.Payload, &m) == nil {
				status <- m.S
			}
		}
		close(status)
	}()
	if ok, err := ch.SendRequest("subsystem", true, ssh.Marshal(struct{ S string }{"sftp"})); !ok || err != nil {
		t.Fatalf("subsystem request: %v %v", ok, err)
	}
	init := []byte{0, 0, 0, 5, 1, 0, 0, 0, 3} // SSH_FXP_INIT, version 3
	ch.Write(init)
	ch.CloseWrite()
	got, _ := io.ReadAll(ch)
	if st, ok := <-status; !ok || st != 0 || !bytes.Equal(got, init) {
		t.Fatalf("status %d (%v), read %x", st, ok, got)
	}
	if s := w.host.seen()[0]; s.Kind != "subsystem" || s.Command != "sftp" {
		t.Fatalf("the host saw %s %q", s.Kind, s.Command)
	}
	e := w.only()
	if e.Kind != journal.KindSubsystem || string(e.Command) != "sftp" || e.End.BytesIn != 9 || e.End.BytesOut != 9 {
		t.Fatalf("journal %+v %+v", e, e.End)
	}
	if r := w.decider.requests()[0]; r.Relay != approvals.RelaySubsystem || string(r.Command) != "sftp" {
		t.Fatalf("asked about %s %q", r.Relay, r.Command)
	}
}

// Megabytes both ways at once, as scp and git push do: every byte
// arrives, in order, and the journal counts them and keeps the last ones.
func TestRelayLargeTransfer(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = (*hostSession).echo })
	const size = 16 << 20
	data := make([]byte, size)
	rand.Read(data)
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := sess.StdinPipe()
	stdout, _ := sess.StdoutPipe()
	if err := sess.Start("cat"); err != nil {
		t.Fatal(err)
	}
	go func() {
		stdin.Write(data)
		stdin.Close()
	}()
	h := sha256.New()
	n, _ := io.Copy(h, stdout)
	if err := sess.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(data); n != size || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("%d bytes back, or not the bytes sent", n)
	}
	e := w.only()
	if e.End.BytesIn != size || e.End.BytesOut != size || !bytes.Equal(e.End.OutputTail, data[size-4096:]) {
		t.Fatalf("journal: %d in, %d out, tail %d bytes", e.End.BytesIn, e.End.BytesOut, len(e.End.OutputTail))
	}
}
