package safesocket

import (
	"fmt"
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
