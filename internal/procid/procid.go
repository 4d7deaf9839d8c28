// Package procid establishes who is on the other end of a unix socket, from
// live kernel evidence rather than from anything the client says.
//
// A process is identified by several facts that mean something together:
// its pid, its start time (clock ticks since boot, /proc/PID/stat field 22),
// the pidfs inode of a pidfd that pins it (unique for the boot), its uid,
// its parent with the parent's start time, and the file it executes
// (device, inode and SHA-256 of /proc/PID/exe). A pid alone, a path alone or
// a hash alone is never identity.
//
// # Capturing a peer
//
// [PeerOf] reads SO_PEERCRED and SO_PEERPIDFD (falling back to pidfd_open
// followed by a liveness re-check) on an accepted connection and inspects
// the process. [Peer.Verify] re-checks, at the time of each request, that
// the process is still the one that connected: alive (pidfd poll), same
// start time, and the same program.
//
// # An exec is a new process
//
// An exec keeps the pid, the start time and the pidfd. On Linux a pinned
// process also keeps, from before it is inspected, /proc/PID, its stat
// and its maps open, and a change of program shows in any of:
//
//   - the executable: /proc/PID/exe names another file (device, inode);
//   - the address space: a read of the held maps descriptor returns
//     nothing once the address space it was opened on is gone, which an
//     exec does to it (the descriptor holds the mm, not the process; it
//     needs only PTRACE_MODE_READ, which Yama's ptrace_scope=1 leaves
//     alone);
//   - the layout: the code, stack, data, heap, argument and environment
//     addresses of /proc/PID/stat ([Layout]) differ for a new address
//     space, always under address space randomization.
//
// So "exec -a x ./other.sh" under the same interpreter — same pid, start
// time and executable — is a new process, with or without randomization
// (setarch -R): the held address space tells. What the evidence does not
// survive, and why it does not matter: a program that keeps its old
// address space alive in a clone(CLONE_VM) child, execs the same
// executable, and gives the new address space the old layout
// (randomization off and arguments of the same sizes, or
// prctl(PR_SET_MM_MAP), which needs no privilege) hides the exec. Such a
// program is native code written for the purpose, already running in the
// approved process: it can run anything there without an exec. Nor can a
// process's program be told from what it interprets: a shell or an
// interpreter runs whatever its files and input say. A process inside a
// user namespace it made can, after unmapping its executable, point
// /proc/PID/exe at another file (PR_SET_MM_MAP with exe_fd): policy
// rules on executables therefore trust only processes in the gateway's
// own user namespace. Fanotify's FAN_OPEN_EXEC would see every exec, but
// an unprivileged listener is not told which pid made it. The command
// line (/proc/PID/cmdline) and the kernel's name for the process
// (comm) are the process's own claims and are not used.
//
// Nor can an exec be told from a request written before it. The agent
// protocol has the client speak first, so a request may wait in the
// socket before the gateway reads /proc, and the kernel records nowhere
// when a process executed its program. A process that writes a request
// and then executes another program before the gateway identifies it is
// identified as that program, and its request with it (a child it forked
// first can hold the socket and read the answer); every later request is
// checked against that identity. A rule on executables is therefore no
// fence against a process that can execute the program it names.
//
// # What identifying a peer reads (Linux)
//
// Each system call proves one thing, and none proves another's:
//
//   - getsockopt(SO_PEERCRED): the pid and uid of the process that called
//     connect, recorded by the kernel then. The uid is taken as given,
//     not read again from /proc/PID/status; a server that read them to
//     count the connection ([PeerCred]) passes them on ([Table.AdmitCred]).
//   - getsockopt(SO_PEERPIDFD): a pidfd for that very process, even if
//     its pid has been reused since.
//   - fstat(pidfd): its pidfs inode, which names the process once for
//     the boot (Linux 6.9 and later, 64-bit), and finds a pin the
//     process's other connections share.
//   - open(/proc/PID), and relative to it openat(stat) and openat(maps):
//     the files later checks read without a lookup by pid; the maps
//     descriptor holds the address space the process has now.
//   - pread(stat): start time, parent, session, name and layout.
//   - fstatat(/proc/PID, "exe"): the executable's device, inode, size and
//     times (the key of its cached hash), or that it is hidden.
//   - readlinkat(/proc/PID, "exe"): its path, for people.
//   - poll(pidfd): the process has not exited, so /proc/PID named it
//     while all of the above was read.
//
// A connection of a process whose pin is shared already reads only the
// two credentials, the pidfs inode and what Verify reads (the executable,
// the address space, stat, the poll), and takes its parent, session and
// name from that stat, its executable from the pin's process when the
// executable has the device, inode, size and times it had when that
// process was identified. The pidfd it was given is polled (its process,
// alive after the shared pin was, held the pid then) and closed.
//
// [Table.Admit] is the admission every gateway socket uses (agent,
// control, bastion): PeerOf, then a refusal, logged with the socket's
// name, of any peer that runs as neither this process's user nor root.
// The check exists once, here.
//
// [SenderConn] reads with recvmsg and reports, for every chunk of bytes,
// the pid of the process that actually wrote it (SCM_CREDENTIALS), so a
// socket inherited by a child or passed to another process is noticed.
//
// # Tables
//
// Everything that reads /proc goes through a [Table], so that unit tests
// can replay pid reuse and exec in a fake process table. [Host] is the
// real one.
package procid

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrGone reports that a process exited or its pid now belongs to another
// process.
var ErrGone = errors.New("process is gone")

// ErrChanged reports that a process executed another program since it was
// identified.
var ErrChanged = errors.New("process executed another program")

// ErrNoResources reports that a process could not be checked because this
// process ran out of a resource of its own (descriptors, memory): nothing
// is known of the process, neither that it is the one identified nor that
// it is not. A caller refuses what it was asked for, as it would for a
// process that changed, and says why; it does not take the process for
// gone or changed (a run does not end), and may check it again once the
// resource is back.
var ErrNoResources = errors.New("the gateway is out of descriptors or memory")

// Short reports whether err is a system call failing for want of a
// resource of the caller's: descriptors (EMFILE, ENFILE), buffers
// (ENOBUFS) or memory (ENOMEM).
func Short(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Process holds the identity facts of one process.
type Process struct {
	PID        int
	PPID       int
	UID        uint32
	StartTicks uint64 // clock ticks since boot, /proc/PID/stat field 22
	Session    int    // POSIX session id (the terminal session); a signal, not proof
	Comm       string // kernel's short name; display only
	PidfsIno   uint64 // inode of a pidfd for the process; 0 when unknown
	Exe        Exe
	Layout     Layout // where its program's address space was placed; zero when unknown
}

// Exe identifies the file a process executes.
type Exe struct {
	Path   string // display only: the path can be replaced
	Dev    uint64
	Ino    uint64
	Size   int64
	SHA256 [32]byte // zero when the executable could not be read
	// Hidden: the process is not dumpable, so its /proc/PID/exe belongs
	// to root and nothing of its executable is known. An exec makes a
	// process dumpable again (unless the new program opts out at once),
	// so the executable then shows and differs.
	Hidden bool
}

// Same reports whether e and o name the same executable file (or are
// both hidden).
func (e Exe) Same(o Exe) bool { return e.Hidden == o.Hidden && e.Dev == o.Dev && e.Ino == o.Ino }

// Hash returns the executable's SHA-256 in hex, or "" when unknown.
func (e Exe) Hash() string {
	if e.SHA256 == ([32]byte{}) {
		return ""
	}
	return hex.EncodeToString(e.SHA256[:])
}

// Name returns the base name of the executable, falling back to comm. The
// comm of a process whose executable is hidden is the only name it has,
// and one it chose (prctl PR_SET_NAME): it is marked, "(hidden) ssh", so
// that it never reads as a program seen.
func (p *Process) Name() string {
	switch {
	case p.Exe.Path != "":
		return filepath.Base(p.Exe.Path)
	case p.Exe.Hidden:
		return hiddenMark + p.Comm
	}
	return p.Comm
}

// hiddenMark precedes the name of a process whose executable is hidden.
const hiddenMark = "(hidden) "

// String renders the process for people: "ssh (4121)".
func (p *Process) String() string {
	return fmt.Sprintf("%s (%d)", p.Name(), p.PID)
}

// SameProcess reports whether p and o describe the same process lifetime:
// same pid and start time (and pidfs inode when both know it).
func (p *Process) SameProcess(o *Process) bool {
	if p.PID != o.PID || p.StartTicks != o.StartTicks {
		return false
	}
	return p.PidfsIno == 0 || o.PidfsIno == 0 || p.PidfsIno == o.PidfsIno
}

// Started converts the start time to wall-clock time, for display only.
func (p *Process) Started(t *Table) time.Time {
	return t.BootTime().Add(time.Duration(p.StartTicks) * time.Second / clockTicks)
}

// clockTicks is USER_HZ, which is 100 on every Linux ABI.
const clockTicks = 100

// Chain is a process followed by its ancestors, nearest first.
type Chain []Process

// Describe is a compact one-line identity for logs and cards:
// "ssh pid=4121 exe=/usr/bin/ssh sha256=1f2e3d4c uid=1000".
func (p *Process) Describe() string {
	h := p.Exe.Hash()
	if len(h) > 12 {
		h = h[:12]
	}
	return "pid=" + strconv.Itoa(p.PID) + " exe=" + p.Exe.Path + " sha256=" + h + " uid=" + strconv.FormatUint(uint64(p.UID), 10)
}
