package bastion

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// The preamble is the first line "postern connect" writes on the
// bastion's socket, before any SSH byte: the destination ssh resolved
// from its configuration (%r %h %p). The bastion answers "ok" or
// "error MESSAGE" on one line, then speaks SSH.
const preambleMagic = "postern-connect/1"

// maxPreamble bounds the preamble line.
const maxPreamble = 1024

func writePreamble(w io.Writer, t Target) error {
	_, err := fmt.Fprintf(w, "%s %s %s %d\n", preambleMagic, url.QueryEscape(t.User), url.QueryEscape(t.Host), t.Port)
	return err
}

// readPreamble reads the client's preamble; the caller sets a deadline.
func readPreamble(r *bufio.Reader) (Target, error) {
	line, err := readLine(r)
	if err != nil {
		return Target{}, err
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != preambleMagic {
		return Target{}, errors.New("not a postern connect preamble")
	}
	user, err1 := url.QueryUnescape(f[1])
	host, err2 := url.QueryUnescape(f[2])
	if err1 != nil || err2 != nil {
		return Target{}, errors.New("malformed preamble")
	}
	return ParseTarget(user, host, f[3])
}

func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return b.String(), nil
		}
		if b.Len() >= maxPreamble {
			return "", errors.New("preamble too long")
		}
		b.WriteByte(c)
	}
}

// ErrNoBastion is returned by Connect when nothing listens at its socket.
var ErrNoBastion = errors.New("no bastion")

// Connect opens a connection to the bastion at sock for t, and returns it
// once the bastion accepted the destination; SSH follows on it.
func Connect(sock string, t Target) (*net.UnixConn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%w at %s (%v)", ErrNoBastion, sock, errors.Unwrap(err))
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	if err := answer(c, writePreamble(c, t)); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// answer reads the bastion's answer to the preamble, whose writing
// failed with werr (or nil): a bastion may refuse a client before it
// reads the preamble (it cannot identify it), and its answer says why,
// where the failed write would not.
func answer(c net.Conn, werr error) error {
	// Read the answer byte by byte: nothing after it may be consumed.
	line, err := readLine(bufio.NewReaderSize(oneByte{c}, 16))
	if msg, ok := strings.CutPrefix(line, "error "); ok && err == nil {
		return errors.New(msg)
	}
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return fmt.Errorf("the bastion closed the connection: %w", err)
	case line != "ok":
		return fmt.Errorf("unexpected answer from the bastion: %q", line)
	}
	return nil
}

// oneByte reads one byte at a time, so that a bufio.Reader on top never
// reads past the answer line.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
