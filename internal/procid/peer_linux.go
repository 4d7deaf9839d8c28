package procid

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PeerOf identifies the process at the other end of c from SO_PEERCRED
// and SO_PEERPIDFD. On kernels without SO_PEERPIDFD (before 6.5) it opens a
// pidfd for the credential's pid and accepts it only if the process still
// has the start time it had when inspected.
func (t *Table) PeerOf(c *net.UnixConn) (*Peer, error) { return t.peerOf(c, nil) }

// peerOf is PeerOf; the credentials are read unless known is given (what
// PeerCred read of c).
func (t *Table) peerOf(c *net.UnixConn, known *Cred) (*Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		cred  Cred
		pidfd = -1
		cerr  error
	)
	err = raw.Control(func(fd uintptr) {
		if known != nil {
			cred = *known
		} else if cred, cerr = peerCred(int(fd)); cerr != nil {
			return
		}
		if n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd = n
		}
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading peer credentials: %w", err)
	}
	if cred.PID <= 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return nil, errors.New("peer credentials carry no pid (peer in another pid namespace?)")
	}
	var pn pin
	if pidfd >= 0 {
		pn, err = newPidfdPin(pidfd)
	} else {
		pn, err = pinPID(cred.PID)
	}
	if err != nil {
		return nil, err
	}
	return t.finish(cred.PID, cred.UID, true, pn)
}

func peerCred(fd int) (Cred, error) {
	u, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Cred{}, err
	}
	return Cred{PID: int(u.Pid), UID: u.Uid}, nil
}

// pidfdPin holds a pidfd for a process; a pidfd never refers to another
// process, even after the pid is reused.
type pidfdPin struct {
	fd    int
	inode uint64
	once  sync.Once
	done  chan struct{}

	// mu guards the descriptors against a use after close (a closed
	// number may name another file by then).
	mu     sync.RWMutex
	closed bool
	held   held // what shows an exec: see program_linux.go
}

func newPidfdPin(fd int) (pin, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("fstat pidfd: %w", err)
	}
	return &pidfdPin{fd: fd, inode: st.Ino, held: noHeld}, nil
}

func pinPID(pid int) (pin, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		return newPidfdPin(fd)
	case errors.Is(err, unix.ESRCH):
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	case errors.Is(err, unix.ENOSYS):
		return startPin{}, nil
	default:
		return nil, gone(pid, fmt.Errorf("pidfd_open: %w", err))
	}
}

func (p *pidfdPin) ino() uint64 { return p.inode }

// shareable reports whether pn holds descriptors worth sharing between
// the connections of one process (share.go).
func shareable(pn pin) bool {
	_, ok := pn.(*pidfdPin)
	return ok
}

func (p *pidfdPin) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.held.close()
	return unix.Close(p.fd)
}

// alive polls the pidfd: it becomes readable when the process exits.
func (p *pidfdPin) alive(_ *Table, proc *Process) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed || pidfdExited(p.fd) {
		return fmt.Errorf("pid %d: %w", proc.PID, ErrGone)
	}
	return nil
}

func (p *pidfdPin) exitsWithin(d time.Duration) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.closed || pidfdExitsWithin(p.fd, d)
}

func pidfdExited(fd int) bool { return pidfdExitsWithin(fd, 0) }

// pidfdExitsWithin reports whether the process of pidfd fd exits within
// d (milliseconds are its unit), or has.
func pidfdExitsWithin(fd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		// A pidfd that cannot be polled proves nothing: treat as gone.
		return err != nil || n > 0
	}
}

// exited starts, once, a watcher that parks on the runtime's poller until
// the pidfd becomes readable, for as long as the process lives.
func (p *pidfdPin) exited() <-chan struct{} {
	p.once.Do(func() {
		done := make(chan struct{})
		p.done = done
		exit := func() { close(done) }
		switch stop, err := p.watch(exit); {
		case stop != nil:
		case Short(err):
			// Out of descriptors: the process is not gone for that.
			go p.watchWhenFree(exit)
		default:
			exit() // it cannot be watched: taken as gone
		}
	})
	return p.done
}

// watchWhenFree starts the watch of exited once a descriptor can be had
// for it, polling the pidfd meanwhile, with a pause that doubles from 5ms
// up to a second.
func (p *pidfdPin) watchWhenFree(exit func()) {
	var pause time.Duration
	for {
		pause = min(max(2*pause, 5*time.Millisecond), time.Second)
		time.Sleep(pause)
		p.mu.RLock()
		gone := p.closed || pidfdExited(p.fd)
		p.mu.RUnlock()
		if gone {
			exit()
			return
		}
		switch stop, err := p.watch(exit); {
		case stop != nil:
			return
		case !Short(err):
			exit()
			return
		}
	}
}

// watchExit watches a duplicate of the pidfd, parked on the runtime's
// poller, and calls onExit when it becomes readable (or cannot be
// polled: taken as gone). The duplicate is the watch's own: closing the
// pin does not end it, stop does.
func (p *pidfdPin) watchExit(onExit func()) (stop func()) {
	stop, _ = p.watch(onExit)
	return stop
}

// watch is watchExit, and says why it could not watch.
func (p *pidfdPin) watch(onExit func()) (stop func(), err error) {
	p.mu.RLock()
	fd, err := -1, ErrGone
	if !p.closed {
		// Closed on exec, as the pin's own: the programs the gateway
		// starts get none of its descriptors.
		fd, err = unix.FcntlInt(uintptr(p.fd), unix.F_DUPFD_CLOEXEC, 0)
	}
	p.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer f.Close()
		exited := false
		rc.Read(func(fd uintptr) bool {
			exited = pidfdExited(int(fd))
			return exited
		})
		if exited {
			onExit()
		}
	}()
	return func() {
		// A read deadline in the past wakes the watch.
		f.SetReadDeadline(time.Unix(1, 0))
		<-ended
	}, nil
}

// PeerCred returns the credentials of the process at the other end of c
// from SO_PEERCRED alone: it opens no descriptor, so that a server can
// count the connection against its user before it identifies the process
// ([Table.AdmitCred], which does not read them again).
func PeerCred(c *net.UnixConn) (Cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Cred{}, err
	}
	var (
		cred Cred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) { cred, cerr = peerCred(int(fd)) }); err != nil {
		return Cred{}, err
	}
	if cerr != nil {
		return Cred{}, fmt.Errorf("reading peer credentials: %w", cerr)
	}
	return cred, nil
}

// uniquePidfsInodes reports whether a pidfd's inode names one process for
// the life of the system: pidfds live on pidfs (Linux 6.9 and later),
// whose 64-bit inode numbers are never reused. Older kernels give every
// pidfd the same anonymous inode.
var uniquePidfsInodes = sync.OnceValue(func() bool {
	if strconv.IntSize != 64 {
		return false
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	return unix.Fstatfs(fd, &fs) == nil && fs.Type == pidfsMagic
})

// pidfsMagic is PID_FS_MAGIC, pidfs's file system type.
const pidfsMagic = 0x50494446
