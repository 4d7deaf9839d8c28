package confine

import (
	"os"
	"syscall"
)

// JobStops are the signals with which a terminal stops a job.
var JobStops = []os.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU}

// isJobStop reports whether sig is one of JobStops.
func isJobStop(sig os.Signal) bool {
	return sig == syscall.SIGTSTP || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU
}
