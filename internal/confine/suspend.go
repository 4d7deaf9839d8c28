package confine

import (
	"os"
	"syscall"
)

// JobStops are the signals with which a terminal stops a job.
var JobStops = []os.Signal{syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU}
