package e2e

// A client built on x/crypto/ssh, as any Go program (or paramiko, or
// libssh) is: it logs in with the agent's keys and never sends
// session-bind@openssh.com, so the agent is never told where it connects.

import (
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// xclientCmd is a shell command that runs the x/crypto client: it logs in
// to s as its user and runs true.
func xclientCmd(s *SSHD) string {
	self, _ := os.Executable()
	return fmt.Sprintf("env POSTERN_E2E_HELPER=xclient POSTERN_XCLIENT_ADDR=127.0.0.1:%d POSTERN_XCLIENT_USER=%s POSTERN_XCLIENT_HOSTKEY=%q %s",
		s.Port, s.User, s.HostKey, self)
}

// xclientMain logs in through $SSH_AUTH_SOCK and exits 0 when the login
// and the command succeed.
func xclientMain() {
	sock, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		fmt.Println("xclient: agent:", err)
		os.Exit(2)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(os.Getenv("POSTERN_XCLIENT_HOSTKEY")))
	if err != nil {
		fmt.Println("xclient: host key:", err)
		os.Exit(2)
	}
	cfg := &ssh.ClientConfig{
		User:            os.Getenv("POSTERN_XCLIENT_USER"),
		Auth:            []ssh.AuthMethod{ssh.PublicKeysCallback(agent.NewClient(sock).Signers)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	}
	c, err := ssh.Dial("tcp", os.Getenv("POSTERN_XCLIENT_ADDR"), cfg)
	if err != nil {
		fmt.Println("xclient: login:", err)
		os.Exit(1)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		fmt.Println("xclient: session:", err)
		os.Exit(1)
	}
	if err := sess.Run("true"); err != nil {
		fmt.Println("xclient: command:", strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
	fmt.Println("xclient: logged in")
}
