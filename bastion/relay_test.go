package bastion

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/marker"
	"github.com/postern/postern/internal/safetext"
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

// A connection to the host cut while the command runs leaves its outcome
// unknown: the client gets no exit status (ssh exits 255) and a message
// naming the journal entry; the journal and the audit log say unknown;
// and an identical command is not sent again unless a person approves.
func TestRelayConnectionCutMidCommand(t *testing.T) {
	w := newWorld(t)
	var errOut bytes.Buffer
	sess := w.startRunning("deploy", &errOut)
	w.host.cut()
	var missing *ssh.ExitMissingError
	if err := sess.Wait(); !errors.As(err, &missing) {
		t.Fatalf("Wait: %v, want no exit status", err)
	}
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonUpstreamLost || e.Unknown.LastPhase != journal.PhaseDispatched || e.End != nil {
		t.Fatalf("journal %s %+v", e.Status(), e.Unknown)
	}
	if !strings.Contains(errOut.String(), "outcome is UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("stderr %q", errOut.String())
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")

	// The identical command, under any name of the host with the same
	// verified key: the card names the earlier entry; denied, it is not
	// sent and the earlier entry keeps its guard.
	w.denyRetries()
	for _, name := range []string{"127.0.0.1", "localhost"} {
		w.name = name
		_, errText, err := w.run("deploy", nil)
		if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
			t.Fatalf("retry as %s: %v, stderr %q", name, err, errText)
		}
		reqs := w.decider.requests()
		if last := reqs[len(reqs)-1]; !strings.Contains(last.RetryOf, e.ID) {
			t.Fatalf("the retry card as %s shows %q", name, last.RetryOf)
		}
		if n := len(w.host.seen()); n != 1 || len(w.entries()) != 1 {
			t.Fatalf("the retry as %s reached the host (%d sessions) or the journal (%d entries)", name, n, len(w.entries()))
		}
	}
	// Approved, it runs once, as a retry of the entry.
	w.decider.setDeny(nil)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("deploy", nil); err != nil {
		t.Fatal(err)
	}
	es := w.entries()
	if len(es) != 2 || es[0].RetryOf != e.ID || es[1].RetriedBy != es[0].ID {
		t.Fatalf("journal after the approved retry: %+v", es)
	}
}

// A command that Stop cuts off after the grace period has its unknown
// outcome in the journal and the audit log before Stop returns: the
// gateway closes both right after. Its connection ends before it records
// that (gliderlabs/ssh does not wait for a connection's sessions); the
// audit log is slow here, as under a busy disk.
func TestStopWaitsForCutCommandsToRecord(t *testing.T) {
	w := newWorld(t)
	w.audit.slowDown(audit.EventCommandUnknown, 300*time.Millisecond)
	w.startRunning("sleep 3600", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n := w.srv.Stop(ctx); n != 1 {
		t.Fatalf("Stop cut %d connections, want 1", n)
	}
	types := w.audit.types()
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonBastionStopped {
		t.Fatalf("journal after Stop: %s %+v", e.Status(), e.Unknown)
	}
	if !slices.Contains(types, string(audit.EventCommandUnknown)) {
		t.Fatalf("audit events when Stop returned: %v", types)
	}
}

// A network that goes silent while the command runs is found out by the
// keepalives: the connection is closed and the outcome is unknown.
func TestRelaySilentNetwork(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.Keepalive = 200 * time.Millisecond }, nil)
	sess := w.startRunning("sleep 3600", nil)
	w.host.freeze()
	var missing *ssh.ExitMissingError
	if err := sess.Wait(); !errors.As(err, &missing) {
		t.Fatalf("Wait: %v, want no exit status", err)
	}
	if e := w.only(); e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonUpstreamLost {
		t.Fatalf("journal %s %+v", e.Status(), e.Unknown)
	}
}

// The host connection ends with the client connection, once no command
// runs on it.
func TestRelayHostConnectionEndsWithTheClient(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	c := w.dial()
	for range 2 {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Run("true"); err != nil {
			t.Fatal(err)
		}
	}
	if logins, ended := w.host.connections(); logins != 1 || ended != 0 {
		t.Fatalf("%d logins, %d ended while the client is connected", logins, ended)
	}
	c.Close()
	for range 1000 {
		if _, ended := w.host.connections(); ended == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the host connection outlived the client")
}

// A connection cut as the command request goes out leaves it unknown:
// the host may have started it.
func TestRelayConnectionCutAtDispatch(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.onCommand = func(*hostSession) { h.cut() } })
	// A raw channel: x/crypto's session reads stderr only once the
	// command started, and this one has no answer.
	ch, reqs, err := w.dial().OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	go ssh.DiscardRequests(reqs)
	if ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ S string }{"migrate"})); err == nil {
		t.Fatalf("the exec request was answered (%v)", ok)
	}
	errOut, _ := io.ReadAll(ch.Stderr())
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.Unknown.Reason != journal.ReasonDispatchUnconfirmed || !strings.Contains(string(errOut), "UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("journal %s %+v, stderr %q", e.Status(), e.Unknown, errOut)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")
}

// A host that refuses the request never ran it: safe to retry.
func TestRelayRejectedByTheHost(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.reject = true })
	if _, _, err := w.run("ls", nil); err == nil || errors.As(err, new(*ssh.ExitError)) {
		t.Fatalf("err %v, want the request refused", err)
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeRejected {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
}

// A channel the host closes without an exit status or signal, on a
// connection that still answers, says nothing of how the command ended:
// a relay on the host that lost its own connection, or postern's own
// bastion, closes it so for an outcome that is unknown. The journal
// records it unknown, ssh gets no status (it exits 255), and an
// identical command asks as a retry of it.
func TestRelayClosedWithoutStatusIsUnknown(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "bye")
			s.ch.Close()
		}
	})
	out, errText, err := w.run("deploy", nil)
	var missing *ssh.ExitMissingError
	if !errors.As(err, &missing) || out != "bye" {
		t.Fatalf("err %v, stdout %q", err, out)
	}
	e := w.only()
	if e.Status() != journal.StatusUnknown || e.End != nil || e.Unknown.Reason != journal.ReasonNoStatus || e.Unknown.LastPhase != journal.PhaseDispatched {
		t.Fatalf("journal %s, end %+v, unknown %+v", e.Status(), e.End, e.Unknown)
	}
	if !strings.Contains(errText, "closed the command's channel without an exit status; its outcome is UNKNOWN (journal entry "+e.ID+")") {
		t.Fatalf("stderr %q", errText)
	}
	wantEvents(t, w.audit, "command_started", "command_unknown")
	w.denyRetries()
	if _, errText, err := w.run("deploy", nil); exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("the identical command: %v, stderr %q", err, errText)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("the identical command reached the host: %d sessions", n)
	}
}

// A denied command is not sent: nothing is signed, the host sees no
// login, the client exits 254 and the journal says safe to retry.
func TestRelayDenied(t *testing.T) {
	w := newWorld(t)
	w.decider.setDeny(func(*approvals.Request) audit.Reason { return "policy_deny" })
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	_, errOut, err := w.run("rm -rf /srv", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, "denied (policy_deny); the command was not sent") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	if w.keys.signatures() != 0 || w.host.logins() != 0 || len(w.host.seen()) != 0 {
		t.Fatalf("signed %d times, %d logins on the host", w.keys.signatures(), w.host.logins())
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeDenied {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
}

// A command longer than a card shows whole is refused before anyone is
// asked: an approval covers what its card showed. One that fits (escaped,
// as the card shows it) is asked about and sent.
func TestRelayRefusesACommandLongerThanACard(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	long := "echo " + strings.Repeat("x", safetext.Command) // 405 characters
	_, errOut, err := w.run(long, nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, "longer than a card shows (405 characters of 400") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	// Escaped, a control character takes four: 99 of them do not fit.
	_, _, err = w.run("echo "+strings.Repeat("\x01", 99), nil)
	if exitStatus(t, err) != ExitDenied {
		t.Fatalf("a command whose escaped form is cut: %v", err)
	}
	if len(w.decider.requests()) != 0 || w.keys.signatures() != 0 || w.host.logins() != 0 || len(w.entries()) != 0 {
		t.Fatalf("asked %d times, signed %d times, %d logins, %d journal entries", len(w.decider.requests()), w.keys.signatures(), w.host.logins(), len(w.entries()))
	}
	if _, _, err := w.run("echo "+strings.Repeat("x", safetext.Command-5), nil); err != nil {
		t.Fatalf("a command that fits: %v", err)
	}
}

// While the keyring is locked the command is refused as vault_locked.
func TestRelayLocked(t *testing.T) {
	w := newWorld(t)
	w.keys.lock()
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errOut, string(audit.ReasonVaultLocked)) || w.host.logins() != 0 {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
}

// Later commands on one client connection share the host connection and
// each asks the decision again; a denied one is not sent.
func TestRelayEachCommandAsks(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, s.Command)
			s.exit(0)
		}
	})
	c := w.dial()
	run := func(cmd string) (string, error) {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		out, err := sess.Output(cmd)
		return string(out), err
	}
	if out, err := run("first"); err != nil || out != "first" {
		t.Fatalf("first: %q %v", out, err)
	}
	if out, err := run("second"); err != nil || out != "second" {
		t.Fatalf("second: %q %v", out, err)
	}
	w.decider.setDeny(func(r *approvals.Request) audit.Reason {
		if string(r.Command) == "third" {
			return "denied"
		}
		return ""
	})
	if _, err := run("third"); exitStatus(t, err) != ExitDenied {
		t.Fatalf("third: %v", err)
	}
	reqs := w.decider.requests()
	if len(reqs) != 3 || reqs[0].Action != approvals.ActionSign || reqs[1].Action != approvals.ActionCommand || reqs[2].Action != approvals.ActionCommand {
		t.Fatalf("decisions: %d", len(reqs))
	}
	if w.host.logins() != 1 || len(w.host.seen()) != 2 {
		t.Fatalf("%d logins, %d commands on the host", w.host.logins(), len(w.host.seen()))
	}
}

// A client that goes away does not end the command: the relay reads the
// rest of its output (a command blocked on a full window would never
// exit), closes its stdin, and journals its real exit.
func TestRelayClientGone(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	stdinEOF := make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			io.WriteString(s.ch, "started\n")
			go func() {
				io.Copy(io.Discard, s.ch)
				close(stdinEOF)
			}()
			<-release
			s.ch.Write(make([]byte, 8<<20)) // more than any window
			s.exit(7)
		}
	})
	c := w.dial()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := sess.StdoutPipe()
	if err := sess.Start("long"); err != nil {
		t.Fatal(err)
	}
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); l != "started\n" {
		t.Fatalf("read %q", l)
	}
	c.Close()
	<-stdinEOF
	close(release)
	e := w.ended("long")
	if e.End == nil || e.End.Outcome != journal.OutcomeExited || e.End.ExitStatus != 7 || !e.End.ClientGone || e.End.BytesOut != 8<<20+8 {
		t.Fatalf("journal %s %+v %+v", e.Status(), e.End, e.Unknown)
	}
}

// When the host asks for more than a key (AuthenticationMethods
// publickey,password), the approved signature is not enough and the
// command cannot start: the client is told, the journal says it was not
// sent, and the bastion keeps serving.
func TestRelayAuthenticationIncomplete(t *testing.T) {
	w := newWorldWith(t, nil, func(hc *ssh.ServerConfig) {
		hc.VerifiedPublicKeyCallback = func(ssh.ConnMetadata, ssh.PublicKey, *ssh.Permissions, string) (*ssh.Permissions, error) {
			return nil, &ssh.PartialSuccessError{Next: ssh.ServerAuthCallbacks{
				PasswordCallback: func(ssh.ConnMetadata, []byte) (*ssh.Permissions, error) { return nil, errors.New("no") },
			}}
		}
	})
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitUnreachable || !strings.Contains(errOut, "the command was not sent") {
		t.Fatalf("err %v, stderr %q", err, errOut)
	}
	if e := w.only(); e.Status() != journal.StatusRetrySafe || e.End.Outcome != journal.OutcomeFailedToStart {
		t.Fatalf("journal %s %+v", e.Status(), e.End)
	}
	if w.keys.signatures() != 1 {
		t.Fatalf("signed %d times", w.keys.signatures())
	}
}

// With markers on for the host, the host receives the wrapper, not the
// command, and the journal says so.
func TestRelayWrapsForMarkers(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.Markers = []string{"127.0.0.*"} }, nil)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("uptime", nil); err != nil {
		t.Fatal(err)
	}
	e := w.only()
	want, err := marker.Wrap(e.ID, []byte("uptime"))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.host.seen()[0].Command; got != want || !e.Marker || string(e.Command) != "uptime" {
		t.Fatalf("the host got %q; marker %v", got, e.Marker)
	}
}

// A host whose key is not in known_hosts is refused before anything is
// signed.
func TestRelayUnknownHostKey(t *testing.T) {
	// known_hosts knows another port of the host, under another key.
	other := writeTemp(t, "[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGN0gKQsFq2EIkFmCj5b5ESy1cxqxNMUrFVWSSpA1bsx\n")
	w := newWorldWith(t, func(c *Config) { c.KnownHosts = []string{filepath.Join(t.TempDir(), "none"), other} }, nil)
	_, errOut, err := w.run("ls", nil)
	if exitStatus(t, err) != ExitUnreachable || !strings.Contains(errOut, "is not in your known_hosts") || w.keys.signatures() != 0 {
		t.Fatalf("err %v, stderr %q, signed %d", err, errOut, w.keys.signatures())
	}
	if e := w.only(); e.End.Outcome != journal.OutcomeFailedToStart {
		t.Fatalf("journal %+v", e.End)
	}
}

// forward relays a local port to the host, as a port forwarded to it (a
// NAT rule, a second Port line, or a forwarder any local program can
// start) does, and returns that port.
func (w *world) forward() int {
	w.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", w.host.l.Addr().String())
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// lose runs command until the host's connections are cut, and returns
// its journal entry, whose outcome is then unknown.
func (w *world) lose(command string) *journal.Entry {
	w.t.Helper()
	sess := w.startRunning(command, io.Discard)
	w.host.cut()
	sess.Wait()
	e := w.ended(command)
	if e.Status() != journal.StatusUnknown {
		w.t.Fatalf("%q after its connection was cut: %s", command, e.Status())
	}
	return e
}

// The host's key says which host a command ran on, whatever port reached
// it: the identical command through another port to the same host is a
// retry of the command whose outcome is unknown.
func TestRelayRetryGuardOverAnotherPort(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	port := w.forward()
	line := "[127.0.0.1]:" + strconv.Itoa(port) + " " + string(ssh.MarshalAuthorizedKey(w.host.key.PublicKey()))
	f, err := os.OpenFile(w.srv.cfg.KnownHosts[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	w.port = port
	_, errText, err := w.run("deploy", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("retry through port %d: %v, stderr %q", port, err, errText)
	}
	if n := len(w.host.seen()); n != 1 || len(w.entries()) != 1 {
		t.Fatalf("the retry through another port reached the host (%d sessions) or the journal (%d entries)", n, len(w.entries()))
	}
}

// The decision learns the kind of session from the session's request,
// not from the command: a command whose bytes read like a shell is an
// exec, and a shell fed a script on its input has no terminal. (The card
// showed "(interactive shell)" for all three.)
func TestRelayKindIsNotTheCommands(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("(interactive shell)", nil); exitStatus(t, err) != 0 {
		t.Fatal(err)
	}
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Stdin = strings.NewReader("rm -rf /srv/data\n")
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Wait(); exitStatus(t, err) != 0 {
		t.Fatal(err)
	}
	reqs := w.decider.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d decisions asked, want 2", len(reqs))
	}
	if r := reqs[0]; r.Relay != approvals.RelayExec || string(r.Command) != "(interactive shell)" {
		t.Errorf("the command \"(interactive shell)\" was asked about as %s %q", r.Relay, r.Command)
	}
	if r := reqs[1]; r.Relay != approvals.RelayShell || r.Terminal || len(r.Command) != 0 {
		t.Errorf("a shell with no terminal was asked about as %s %q, terminal %v", r.Relay, r.Command, r.Terminal)
	}
}

// An approved retry that the host rejected ran nothing: the command whose
// outcome is unknown guards again, and the next identical one is asked
// about as a retry of it, not sent on the approval the rejected one used.
func TestRelayRetryTheHostRejectedLeavesTheGuard(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.host.set(func(h *testHost) { h.reject = true })
	if _, _, err := w.run("deploy", nil); err == nil {
		t.Fatal("the host rejected the approved retry, and the client was not told")
	}
	if asked := w.decider.requests(); !strings.Contains(asked[len(asked)-1].RetryOf, e.ID) {
		t.Fatalf("the first retry was not asked about as one: %+v", asked[len(asked)-1])
	}
	w.denyRetries()
	w.host.set(func(h *testHost) {
		h.reject = false
		h.handle = func(s *hostSession) { s.exit(0) }
	})
	_, errText, err := w.run("deploy", nil)
	if exitStatus(t, err) != ExitDenied || !strings.Contains(errText, "identical command (journal entry "+e.ID+") has an unknown outcome") {
		t.Fatalf("an identical command after the approved retry was rejected: %v, stderr %q, %d commands reached the host", err, errText, len(w.host.seen()))
	}
}

// The card of a retry says what the journal knows of the earlier
// attempt, not only that its outcome is unknown: how it was lost and how
// far it had gone, or what was last found out about it, such as a person
// finding it still running on the host.
func TestRelayRetryCardSaysWhatIsKnownOfTheEarlierAttempt(t *testing.T) {
	w := newWorld(t)
	e := w.lose("deploy")
	w.denyRetries()
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	retryOf := func() string {
		w.run("deploy", nil)
		asked := w.decider.requests()
		return asked[len(asked)-1].RetryOf
	}
	if got := retryOf(); !strings.Contains(got, e.ID) || !strings.Contains(got, "upstream_lost, dispatched") {
		t.Fatalf("the retry card after the connection was lost: %q", got)
	}
	if _, err := w.srv.ResolveByHand(e.ID, journal.Resolution{Result: journal.ResultStillRunning, Evidence: "ps shows it"}, "alice"); err != nil {
		t.Fatal(err)
	}
	if got := retryOf(); !strings.Contains(got, e.ID) || !strings.Contains(got, "still_running") {
		t.Fatalf("the retry card once the command was found still running: %q", got)
	}
	if n := len(w.host.seen()); n != 1 {
		t.Fatalf("%d commands reached the host", n)
	}
}

// A command or subsystem name with a NUL byte is refused before it is
// journaled or sent: OpenSSH's sshd reads it as a C string and ends the
// whole connection on one that holds a NUL, which would cut every
// command running on that connection (they would end unknown).
func TestRelayRefusesACommandWithANULByte(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	_, errOut, err := w.run("true\x00; deploy", nil)
	if err == nil || len(w.host.seen()) != 0 || len(w.entries()) != 0 || !strings.Contains(errOut, "NUL") {
		t.Fatalf("a command with a NUL byte: %v, stderr %q, %d sent to the host, %d journaled", err, errOut, len(w.host.seen()), len(w.entries()))
	}
}

// Marker globs match the host whatever its case, as ssh_config's Host
// patterns do: ssh hands postern connect the name in lower case, and a
// glob written "Prod-*" must still wrap prod-db-1's commands.
func TestMarkerGlobsIgnoreCase(t *testing.T) {
	s := &Server{cfg: Config{Markers: []string{"Prod-*", "db-[A-C]"}}}
	for _, host := range []string{"prod-db-1", "PROD-DB-1", "db-b"} {
		if !s.markersFor(host) {
			t.Errorf("markers = [\"Prod-*\", \"db-[A-C]\"] does not wrap the commands of %s", host)
		}
	}
	if s.markersFor("staging-1") {
		t.Error("markers wrap a host no glob names")
	}
}
