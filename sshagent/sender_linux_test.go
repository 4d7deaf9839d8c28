package sshagent

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A connection handed to another process (inherited, or passed over
// SCM_RIGHTS) asks nothing in that process's name: a request it writes
// is refused and the connection closed, while the process that connected
// is answered on it.
func TestRequestFromAnotherProcessThanTheConnectorIsRefused(t *testing.T) {
	ts := startServer(t)
	c := ts.rawConn(t)
	listRaw(t, c)
	listFromAnotherProcess(t, c)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatalf("answered (%d bytes) a request another process wrote on the connection", n)
	}
}

// listFromAnotherProcess has a child process, which inherits c, write a
// request for the identities on it.
func listFromAnotherProcess(t *testing.T, c net.Conn) {
	t.Helper()
	f, err := c.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := exec.Command("sh", "-c", `printf '\000\000\000\001\013' >&3`)
	child.ExtraFiles = []*os.File{f}
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
}
