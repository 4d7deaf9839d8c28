package safesocket

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Socket activation, as systemd does it (sd_listen_fds(3)): the service
// manager creates the listening socket, and starts the agent with it as
// file descriptor 3 (and the next ones, when there are several),
// LISTEN_FDS saying how many, LISTEN_PID naming the process they are
// for, and LISTEN_FDNAMES their names (FileDescriptorName= in the
// socket unit), separated by colons.

// listenFDsStart is the first descriptor a service manager passes.
const listenFDsStart = 3

// maxListenFDs bounds LISTEN_FDS.
const maxListenFDs = 64

// pickListenFD reads the activation variables for the process self: how
// many descriptors were passed (0 when they are for another process), and
// which of them to use, the one named name or the only one.
func pickListenFD(fds, pid, names string, self int, name string) (n, use int, err error) {
	if p, err := strconv.Atoi(pid); err != nil || p != self {
		return 0, 0, nil
	}
	n, err = strconv.Atoi(fds)
	if err != nil || n < 1 || n > maxListenFDs {
		return 0, 0, fmt.Errorf("socket activation: LISTEN_FDS=%q is not a number of descriptors from 1 to %d", fds, maxListenFDs)
	}
	var list []string
	if names != "" {
		list = strings.Split(names, ":")
	}
	for i, nm := range list {
		if i < n && nm == name {
			return n, i, nil
		}
	}
	if n == 1 {
		return n, 0, nil
	}
	return 0, 0, fmt.Errorf("socket activation: %d sockets passed and none named %q (LISTEN_FDNAMES=%q); set FileDescriptorName=%s in the socket unit", n, name, names, name)
}

// NotifyReady tells the service manager listening at addr (NOTIFY_SOCKET:
// a unix datagram socket, "@" first for an abstract one) that this
// process, its main one, is ready (sd_notify(3)): a unit of Type=notify
// counts as started, and its ExecStartPost runs, only then.
func NotifyReady(addr string) error {
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return fmt.Errorf("NOTIFY_SOCKET=%q names no unix socket", addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("telling the service manager the agent is ready: %w", err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "READY=1\nMAINPID=%d\n", os.Getpid()); err != nil {
		return fmt.Errorf("telling the service manager the agent is ready: %w", err)
	}
	return nil
}
