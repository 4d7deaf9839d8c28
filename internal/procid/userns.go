package procid

import (
	"os"
	"syscall"
)

// InOwnUserNS reports whether p runs in the gateway's own user namespace
// (the namespace this process runs in, or, for a fake table, the one its
// "self" entry names). Only there are its executable's facts its own: a
// process in a user namespace it created holds every capability in it,
// and can point /proc/PID/exe at another file (prctl PR_SET_MM_MAP with
// exe_fd) once it unmapped its own executable. A process whose namespace
// cannot be read is not in it.
func (p *Peer) InOwnUserNS() bool {
	return p.table.sameUserNS(p.PID) && p.pin.alive(p.table, &p.Process) == nil
}

// SamePath reports whether path names, for this process, the file e
// (the same device and inode): whether a process's executable path can be
// believed. A file moved or replaced since the process executed it, or
// seen under another mount namespace, does not pass.
func SamePath(path string, e Exe) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && uint64(sys.Dev) == e.Dev && sys.Ino == e.Ino
}
