package sshagent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/heldsig"
)

// OpenSSH's helpers, which load FIDO and PKCS#11 provider libraries in a
// process of their own: the gateway never loads a provider. Their
// locations can be changed with the variables OpenSSH reads.
const (
	defaultSKHelper     = "/usr/lib/openssh/ssh-sk-helper"
	defaultPKCS11Helper = "/usr/lib/openssh/ssh-pkcs11-helper"
)

func helperPath(env, def string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	return def
}

// A framed is a connection that carries the agent protocol's framing, a
// u32 length and then the message: to OpenSSH's helpers, and to an
// upstream agent. It is used by one goroutine at a time, a reply read
// after each request.
type framed struct {
	conn  net.Conn
	r     *bufio.Reader // a reply's length and body in one read
	armed *time.Time    // the read deadline set on conn, zero for none
	wrote *time.Time    // the write deadline set on conn, zero for none
}

func newFramed(c net.Conn) framed {
	return framed{conn: c, r: bufio.NewReaderSize(c, 4096), armed: new(time.Time), wrote: new(time.Time)}
}

// deadlineSlack is how much earlier than asked a read deadline set for
// an earlier call may end a wait: a deadline is set again only when the
// one set would end the wait later than asked or more than this earlier.
// Setting one (and clearing it after each call) costs two updates of
// the runtime's timers per exchange; requests in a row now set one about
// once a second.
const deadlineSlack = time.Second

// send writes one framed message: its length, then body.
func (f framed) send(body []byte) error {
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	_, err := f.conn.Write(append(msg, body...))
	clear(msg)
	return err
}

// sendBy is send for a peer that may stop reading: it gives up at
// deadline (at least deadlineSlack before it, as recv).
func (f framed) sendBy(body []byte, deadline time.Time) error {
	if a := *f.wrote; a.IsZero() || a.After(deadline) || deadline.Sub(a) > deadlineSlack {
		f.conn.SetWriteDeadline(deadline)
		*f.wrote = deadline
	}
	return f.send(body)
}

// recv reads one framed message of at most MaxMessage bytes, waiting at
// most until deadline (and at least until deadlineSlack before it).
func (f framed) recv(deadline time.Time) ([]byte, error) {
	if a := *f.armed; a.IsZero() || a.After(deadline) || deadline.Sub(a) > deadlineSlack {
		f.conn.SetReadDeadline(deadline)
		*f.armed = deadline
	}
	var hdr [4]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxMessage {
		return nil, fmt.Errorf("reply of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(f.r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// A helperProc is a running helper and our end of its socketpair.
type helperProc struct {
	cmd *exec.Cmd
	framed
}

// startHelper runs path with its standard input and output on a
// socketpair, as OpenSSH's agent and ssh start their helpers.
func startHelper(path string, args ...string) (*helperProc, error) {
	// Close-on-exec before any other goroutine can fork: only the
	// helper gets its end.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "helper")
	theirs := os.NewFile(uintptr(fds[1]), "helper")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout = theirs, theirs
	cmd.Stderr = os.Stderr
	cmd.Env = helperEnv()
	// With the signal mask the person gave the gateway.
	heldsig.Release(cmd)
	if err := cmd.Start(); err != nil {
		fc.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return &helperProc{cmd: cmd, framed: newFramed(fc)}, nil
}

// helperEnv passes the helper what provider libraries read (a token's
// configuration), nothing of the gateway's secrets, and nothing that
// tells the helper's loader to load more (LD_PRELOAD, LD_LIBRARY_PATH):
// the helper sees the token's PIN, and the only library loaded into it
// beyond its own is the provider -P allowed. The provider comes in each
// request, so SSH_SK_PROVIDER, which ssh-add reads, stays out too.
func helperEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "SOFTHSM2_CONF"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// stop closes our end and waits for the helper, killing it if it does
// not exit by itself soon.
func (h *helperProc) stop() error {
	h.conn.Close()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		<-done
		return errors.New("helper did not exit; killed")
	}
}
