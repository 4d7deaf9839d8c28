package sshagent

import (
	"encoding/hex"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// The test binary doubles as a requester: with SSHAGENT_TEST_ASK set to
// a socket it connects there, writes the frame in SSHAGENT_TEST_FRAME
// (hex), waits for a line on its standard input, and then runs another
// program (sleep) on the same pid with the connection still open.
func TestMain(m *testing.M) {
	if sock := os.Getenv("SSHAGENT_TEST_ASK"); sock != "" {
		os.Exit(askThenExec(sock, os.Getenv("SSHAGENT_TEST_FRAME")))
	}
	if dir := os.Getenv("SSHAGENT_TEST_PKCS11"); dir != "" {
		os.Exit(slowPKCS11Helper(dir))
	}
	os.Exit(m.Run())
}

func askThenExec(sock, frame string) int {
	b, err := hex.DecodeString(frame)
	if err != nil {
		return 2
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		return 3
	}
	if _, err := c.Write(b); err != nil {
		return 4
	}
	if _, err := io.ReadFull(os.Stdin, make([]byte, 1)); err != nil {
		return 5
	}
	rc, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 6
	}
	rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETFD, 0) }) // kept across the exec
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return 7
	}
	unix.Exec(sleep, []string{"sleep", "60"}, os.Environ())
	return 8
}
