package procid

import "errors"

// Namespaces identifies a process's user, pid and mount namespaces by the
// inode numbers of their nsfs files (/proc/PID/ns/*). Zero means unknown.
type Namespaces struct {
	User uint64 `json:"user"`
	PID  uint64 `json:"pid"`
	Mnt  uint64 `json:"mnt"`
}

// Known reports whether the namespaces were read.
func (n Namespaces) Known() bool { return n.User != 0 && n.PID != 0 && n.Mnt != 0 }

// ErrUnreadable reports that a process's /proc/PID/ns links cannot be
// read: the process is not dumpable and lives in no user namespace this
// process owns (for a process of the same uid, it was not started inside
// a user namespace this process's uid created).
var ErrUnreadable = errors.New("its namespaces cannot be read: the process is not dumpable and was not started in a user namespace of this user")
