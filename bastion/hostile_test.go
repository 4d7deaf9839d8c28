package bastion

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/bastion/journal"
)

// A client cannot make the bastion hold an unbounded environment: past
// a few dozen variables, or a few kilobytes of them, env requests are
// refused, as OpenSSH's sshd refuses them past its own bound.
func TestRelayBoundsTheEnvironment(t *testing.T) {
	w := newWorld(t)
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	value := strings.Repeat("x", 1000) + ".UTF-8"
	accepted := 0
	for i := range 1000 {
		if sess.Setenv(fmt.Sprintf("LC_%d", i), value) == nil {
			accepted++
		}
	}
	if accepted > maxEnvVars {
		t.Fatalf("%d environment variables accepted, want at most %d", accepted, maxEnvVars)
	}
	if accepted == 0 {
		t.Fatal("no environment variable accepted")
	}
}

// A locale variable passes only with a value that names the C locale or a
// UTF-8 one: under a locale whose multibyte characters hold a backslash
// or a backquote byte (BIG5, GBK, Shift JIS), the host's shell reads the
// command otherwise than the card showed it: the "\\" that escapes a
// quote on the card is the end of a character there, and what the card
// showed inside a string runs.
func TestRelayPassesOnlyLocalesThatReadTheCommandAsTheCardShowed(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, c := range []struct {
		name, value string
		ok          bool
	}{
		{"LANG", "en_US.UTF-8", true},
		{"LC_CTYPE", "C.utf8", true},
		{"LC_COLLATE", "C", true},
		{"LC_TIME", "POSIX", true},
		{"LANGUAGE", "en_US:en", true},
		{"LC_ALL", "zh_TW.BIG5", false},
		{"LC_CTYPE", "ja_JP.SJIS", false},
		{"LANG", "zh_CN.GBK", false},
		{"LC_MESSAGES", "/home/x/locale", false},
		{"LC_NUMERIC", "en_US.UTF-8 x", false},
	} {
		if err := sess.Setenv(c.name, c.value); (err == nil) != c.ok {
			t.Errorf("%s=%s: accepted %v, want %v", c.name, c.value, err == nil, c.ok)
		}
	}
	if err := sess.Run("true"); err != nil {
		t.Fatal(err)
	}
	if env := w.host.seen()[0].Env; len(env) != 5 || env["LC_ALL"] != "" || env["LC_CTYPE"] != "C.utf8" || env["LANG"] != "en_US.UTF-8" {
		t.Fatalf("the host was sent the environment %v", env)
	}
}

// A client cannot open session channels without end on one connection:
// past as many as OpenSSH's sshd serves by default, a new one is refused.
func TestRelayBoundsSessionsPerConnection(t *testing.T) {
	w := newWorld(t)
	c := w.dial()
	var open []*ssh.Session
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	for i := range 3 * maxSessions {
		s, err := c.NewSession()
		if err != nil {
			if i < maxSessions {
				t.Fatalf("session %d refused: %v", i+1, err)
			}
			break
		}
		open = append(open, s)
	}
	if len(open) > maxSessions {
		t.Fatalf("%d sessions open on one connection, want at most %d", len(open), maxSessions)
	}
	// A session that ends makes room for another.
	open[0].Close()
	open = open[1:]
	for range 50 {
		s, err := c.NewSession()
		if err == nil {
			open = append(open, s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no session once one ended")
}

// Port forwarding, streamlocal forwarding and X11 never reach a host:
// the bastion refuses the channels and the global requests.
func TestRelayRefusesForwarding(t *testing.T) {
	w := newWorld(t)
	c := w.dial()
	for _, typ := range []string{"direct-tcpip", "direct-streamlocal@openssh.com", "x11", "auth-agent@openssh.com"} {
		if ch, _, err := c.OpenChannel(typ, nil); err == nil {
			ch.Close()
			t.Errorf("channel %s opened", typ)
		}
	}
	for _, typ := range []string{"tcpip-forward", "streamlocal-forward@openssh.com", "no-more-sessions@openssh.com"} {
		if ok, _, err := c.SendRequest(typ, true, nil); ok || err != nil {
			t.Errorf("global request %s: ok %v, err %v", typ, ok, err)
		}
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, typ := range []string{"x11-req", "auth-agent-req@openssh.com", "signal"} {
		if ok, _ := sess.SendRequest(typ, true, nil); ok {
			t.Errorf("session request %s accepted", typ)
		}
	}
	if len(w.host.seen()) != 0 || w.host.logins() != 0 {
		t.Fatal("the host was reached")
	}
}

// Malformed session requests are refused by the bastion and never reach
// the host: OpenSSH's sshd ends the whole connection on one, which would
// cut the command. Well-formed ones still go through.
func TestRelayRefusesMalformedRequests(t *testing.T) {
	w := newWorld(t)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // before the world's: it waits for the commands
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			go func() { <-stop; s.ch.Close() }()
			for req := range s.reqs {
				fmt.Fprintf(s.ch, "request %s %x\n", req.Type, req.Payload)
				if req.WantReply {
					req.Reply(true, nil)
				}
				if req.Type == "signal" {
					s.exit(0)
					return
				}
			}
		}
	})
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if ok, _ := sess.SendRequest("pty-req", true, ssh.Marshal(struct {
		Term                         string
		Columns, Rows, Width, Height uint32
		Modes                        string
	}{"xterm", 80, 24, 0, 0, "\x35\x00\x00"})); ok {
		t.Error("a terminal with truncated modes was accepted")
	}
	if ok, _ := sess.SendRequest("shell", true, []byte("x")); ok {
		t.Error("a shell request with a payload was accepted")
	}
	sess, err = w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out strings.Builder
	sess.Stdout = &out
	if err := sess.Start("cmd"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		typ     string
		payload []byte
	}{
		{"window-change", []byte("x")},
		{"break", nil},
		{"xon-xoff", []byte{1, 2}},
		{"signal", ssh.Marshal(struct{ S string }{"TERM"})[:5]},
	} {
		if ok, _ := sess.SendRequest(r.typ, true, r.payload); ok {
			t.Errorf("malformed %s accepted", r.typ)
		}
	}
	if t.Failed() {
		return // the host may have ended the command
	}
	if err := sess.WindowChange(24, 80); err != nil {
		t.Fatal(err)
	}
	if err := sess.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := sess.Wait(); err != nil {
		t.Fatal(err)
	}
	want := "request window-change 000000500000001800000280000000c0\nrequest signal 000000045445524d\n"
	if out.String() != want {
		t.Fatalf("the host saw\n%s\nwant\n%s", out.String(), want)
	}
	if len(w.host.seen()) != 1 {
		t.Fatalf("the host saw %d sessions", len(w.host.seen()))
	}
}

// A client cannot stall its connection with requests on a session the
// bastion is not reading: the requests sent while the session's card
// waits are read (and refused), so the bastion still sees the client go
// and withdraws the card.
func TestRelayReadsRequestsWhileTheCardWaits(t *testing.T) {
	w := newWorld(t)
	c := w.established()
	w.decider.hold = make(chan struct{})
	defer close(w.decider.hold)
	ch, _, err := c.OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.SendRequest("exec", false, ssh.Marshal(struct{ S string }{"deploy --all"})); err != nil {
		t.Fatal(err)
	}
	w.waitAsked(2)
	for range 100 {
		if _, err := ch.SendRequest("break", false, ssh.Marshal(struct{ Millis uint32 }{0})); err != nil {
			t.Fatal(err)
		}
	}
	c.Close() // the client goes while its card waits
	w.waitClientGone(1)
}

// A client that does not answer a request the host sends on its session
// (sshd's keepalive@openssh.com, with ClientAliveInterval set) cannot
// keep the command's end from the journal: the bastion does not wait on
// the client's answer.
func TestRelayDoesNotWaitOnTheClientsAnswerToTheHost(t *testing.T) {
	w := newWorld(t)
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			go s.ch.SendRequest("keepalive@openssh.com", true, nil)
			time.Sleep(50 * time.Millisecond)
			s.exit(3)
		}
	})
	ch, _, err := w.dial().OpenChannel("session", nil) // its requests never read
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ S string }{"deploy"})); !ok || err != nil {
		t.Fatalf("exec: %v %v", ok, err)
	}
	if e := w.ended("deploy"); e.End == nil || e.End.Outcome != journal.OutcomeExited || e.End.ExitStatus != 3 {
		t.Fatalf("the end journaled: %+v %+v", e.End, e.Unknown)
	}
}

// deafConn is a client's connection that stops reading once deaf is
// closed, as a client that never answers the bastion's close of a
// channel with its own.
type deafConn struct {
	net.Conn
	deaf   chan struct{}
	closed chan struct{}
}

func (d *deafConn) Read(p []byte) (int, error) {
	n, err := d.Conn.Read(p)
	select {
	case <-d.deaf:
		<-d.closed // what came is never read
		return 0, net.ErrClosed
	default:
		return n, err
	}
}

func (d *deafConn) Close() error {
	select {
	case <-d.closed:
	default:
		close(d.closed)
	}
	return d.Conn.Close()
}

// A session channel counts against the bound of sessions on a connection
// until the client has closed it too: a client that never answers the
// bastion's close cannot open channels without end.
func TestRelayCountsASessionUntilTheClientClosesIt(t *testing.T) {
	w := newWorld(t)
	conn, err := Connect(w.sock, w.target())
	if err != nil {
		t.Fatal(err)
	}
	d := &deafConn{Conn: conn, deaf: make(chan struct{}), closed: make(chan struct{})}
	cc, chans, reqs, err := ssh.NewClientConn(d, w.target().Addr(), &ssh.ClientConfig{
		User:            w.target().User,
		HostKeyCallback: ssh.InsecureIgnoreHostKey(),
		Config:          ssh.Config{Ciphers: fastCiphers},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ssh.NewClient(cc, chans, reqs)
	defer c.Close()
	var chs []ssh.Channel
	for range maxSessions {
		ch, _, err := c.OpenChannel("session", nil)
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	close(d.deaf)
	for _, ch := range chs { // refused at once: the bastion closes each
		ch.SendRequest("exec", false, ssh.Marshal(struct{ S string }{"x\x00"}))
	}
	time.Sleep(500 * time.Millisecond)
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	for info := range w.srv.active {
		if n := info.sessions.Load(); n != maxSessions {
			t.Fatalf("%d sessions counted on a connection whose client closed none of its %d", n, maxSessions)
		}
	}
}

// The host name the client chose reaches the client's terminal escaped,
// as every string a requester controls: a name holding a terminal reset
// that cannot be dialled is refused in a message that names it escaped.
func TestHostNameEscapedOnTheClientsStderr(t *testing.T) {
	w := newWorld(t)
	w.name = "evil\x1bc\x07.invalid"
	_, errText, err := w.run("true", nil)
	if exitStatus(t, err) != ExitUnreachable || strings.ContainsAny(errText, "\x1b\x07") || !strings.Contains(errText, `evil\x1bc\x07.invalid`) {
		t.Fatalf("refused with %v, stderr %q", err, errText)
	}
}
