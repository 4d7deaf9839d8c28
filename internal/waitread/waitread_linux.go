package waitread

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// reader reads f once the epoll set set, which holds f alone, says f is
// readable.
type reader struct {
	f   *os.File
	set *os.File // the epoll set, non-blocking, in the runtime's poller
	raw syscall.RawConn
	evs [1]unix.EpollEvent
}

// newReader returns a reader of f, or nil when f needs none (it is
// non-blocking already) or epoll cannot watch it (a regular file).
func newReader(f *os.File) (io.Reader, error) {
	fraw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	if err := fraw.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return nil, err
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		return nil, err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// Level-triggered: the set reports f for as long as it is readable
	// (data, the end of input, an error).
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		unix.Close(ep)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, os.NewSyscallError("fcntl", err)
	}
	set := os.NewFile(uintptr(ep), "waitread")
	raw, err := set.SyscallConn()
	if err != nil {
		set.Close()
		return nil, err
	}
	return &reader{f: f, set: set, raw: raw}, nil
}

// Read waits until f is readable, then reads it.
func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var werr error
	err := r.raw.Read(func(fd uintptr) bool {
		var n int
		n, werr = unix.EpollWait(int(fd), r.evs[:], 0)
		// Nothing yet (or interrupted): the runtime's poller waits
		// until the set is readable, and this runs again.
		return n != 0 || (werr != nil && !errors.Is(werr, unix.EINTR))
	})
	if err == nil && werr != nil {
		err = os.NewSyscallError("epoll_wait", werr)
	}
	if err != nil {
		return 0, err
	}
	return r.f.Read(p)
}

// Close releases the epoll set; f stays open.
func (r *reader) Close() error { return r.set.Close() }
