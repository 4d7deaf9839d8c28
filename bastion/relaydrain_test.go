package bastion

import (
	"io"
	"testing"
	"time"

	"github.com/postern/postern/bastion/journal"
)

// A command whose client reads none of its output (a pager left open on
// the first screen, a client that stopped reading) and that has ended on
// the host, its output and exit status sent, has its end recorded at
// once: the host's last bytes are all in the bastion by then. Were it
// left RUNNING until the client read, a gateway killed meanwhile would
// leave it unknown though its status had arrived. The client still gets
// every byte, then the status.
func TestRelayRecordsTheEndBeforeTheClientReadsTheOutput(t *testing.T) {
	w := newWorld(t)
	const size = 3 << 20 // more than the client's window, less than the two windows and the bastion's buffer
	closed := make(chan struct{})
	w.host.set(func(h *testHost) {
		h.handle = func(s *hostSession) {
			s.ch.Write(make([]byte, size))
			s.exit(3)
			close(closed)
		}
	})
	sess, err := w.dial().NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := sess.StdoutPipe() // not read until the end is recorded
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("make report"); err != nil {
		t.Fatal(err)
	}
	<-closed
	var e *journal.Entry
	for range 1000 { // a deadline: 10s
		e = w.only()
		if e.Status() != journal.StatusRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e.Status() == journal.StatusRunning {
		t.Fatal("the entry of a command that ended on the host, its exit status sent, reads RUNNING while its client has not read the output")
	}
	if e.End == nil || e.End.Outcome != journal.OutcomeExited || e.End.ExitStatus != 3 || e.End.BytesOut != size {
		t.Fatalf("journal %s %+v %+v", e.Status(), e.End, e.Unknown)
	}
	n, _ := io.Copy(io.Discard, stdout)
	if err := sess.Wait(); exitStatus(t, err) != 3 || n != size {
		t.Fatalf("the client read %d bytes of %d, then %v", n, size, err)
	}
}
