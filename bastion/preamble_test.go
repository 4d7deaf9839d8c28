package bastion

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPreambleRoundTrip(t *testing.T) {
	for _, tgt := range []Target{{"root", "prod-db-1", 22}, {"git", "example.com", 2222}, {"u+x", "10.0.0.5", 65535}} {
		var b bytes.Buffer
		if err := writePreamble(&b, tgt); err != nil {
			t.Fatal(err)
		}
		got, err := readPreamble(bufio.NewReader(&b))
		if err != nil || got != tgt {
			t.Fatalf("%+v: got %+v %v", tgt, got, err)
		}
	}
	for _, bad := range []string{
		"", "\n", "SSH-2.0-OpenSSH_9.2\n", "postern-connect/1 root host\n", "postern-connect/1 root host 0\n",
		"postern-connect/1 root host 70000\n", "postern-connect/1 root %zz 22\n", "postern-connect/2 root host 22\n",
		"postern-connect/1 root " + strings.Repeat("h", 2000) + " 22\n",
	} {
		if _, err := readPreamble(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("preamble %q accepted", bad)
		}
	}
	if _, err := ParseTarget("root", "a/b", "22"); err == nil {
		t.Error("host with a slash accepted")
	}
}

// FuzzPreamble reads a client's first line. A target accepted is
// complete, written back it reads the same, and the reading takes the
// line alone: the SSH bytes after it are left for the server.
func FuzzPreamble(f *testing.F) {
	for _, s := range []string{
		"postern-connect/1 root prod-db-1 22\nSSH-2.0-OpenSSH_9.6\r\n",
		"postern-connect/1 u%2Bx%40corp 10.0.0.5 65535\n",
		"postern-connect/1 root fe80%3A%3A1%25eth0 0022\n",
		"postern-connect/1 root host +22\n",
		"postern-connect/1 a%20b host 22\n",
		"postern-connect/1  root\thost   22 \r\n",
		"postern-connect/1 root %zz 22\n",
		"postern-connect/1 root " + strings.Repeat("h", 1100) + " 22\n",
		"SSH-2.0-OpenSSH_9.2\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		tgt, err := readPreamble(r)
		if err != nil {
			return
		}
		if tgt.Port < 1 || tgt.Port > 65535 || tgt.Host == "" || tgt.User == "" {
			t.Fatalf("accepted %+v", tgt)
		}
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 || nl > maxPreamble {
			t.Fatalf("accepted a preamble of %d bytes (a newline at %d)", len(b), nl)
		}
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, b[nl+1:]) {
			t.Fatalf("reading the preamble took %d bytes past its line", len(b)-nl-1-len(rest))
		}
		var w bytes.Buffer
		if err := writePreamble(&w, tgt); err != nil {
			t.Fatal(err)
		}
		if again, err := readPreamble(bufio.NewReader(&w)); err != nil || again != tgt {
			t.Fatalf("%+v written as %q reads as %+v, %v", tgt, w.String(), again, err)
		}
	})
}

// A bastion that refuses a client before reading its preamble (it
// cannot identify it for want of descriptors) has closed the connection
// by the time the client writes: the client's write fails, and the
// client still shows the bastion's reason, not "broken pipe".
func TestConnectShowsARefusalItsWriteMissed(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("error cannot identify the connecting process: the gateway is out of descriptors or memory\n"))
		c.Close()
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Once the server has closed, a write fails (EPIPE).
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var werr error
	for werr == nil {
		_, werr = c.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	err = answer(c, werr)
	if err == nil || !strings.Contains(err.Error(), "out of descriptors") {
		t.Fatalf("answer after a failed write: %v; want the bastion's reason", err)
	}
	// Without an answer, the failed write is the error.
	a, b := net.Pipe()
	b.Close()
	if err := answer(a, io.ErrClosedPipe); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("answer with none read: %v; want the write's error", err)
	}
}
