package park

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// poller is an epoll set of the parked sockets, each registered
// level-triggered and one-shot (EPOLLONESHOT): it reports a socket once,
// when it is readable, and then no more until it is armed again. The
// set's own descriptor is handed to the Go runtime's poller (os.NewFile
// of a non-blocking descriptor), so the goroutine that waits on it holds
// no thread while nothing happens.
type poller struct {
	f   *os.File
	raw syscall.RawConn
	fd  int
}

// events is what a parked socket is watched for: data, its end (the peer
// closed or shut down its side) and, always reported, errors and hang-up.
const events = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

func newPoller(l *Lot) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(fd), "park")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &poller{f: f, raw: raw, fd: fd}
	go p.run(l)
	return p, nil
}

// spotSys is what the poller keeps for a connection: whether the set
// holds it, and one epoll_ctl call's arguments and result, for ctl (made
// once per connection: a closure per call would be garbage on every
// request).
type spotSys struct {
	known bool
	epfd  int
	op    int
	ev    unix.EpollEvent
	err   error
	ctl   func(fd uintptr)
}

// epollCtl runs epoll_ctl(op) on the connection's socket, whose
// descriptor stays open meanwhile (RawConn.Control), or on the bare
// descriptor, which the caller keeps open while s holds it.
func (s *Spot) epollCtl(epfd, op int, ev unix.EpollEvent) error {
	if s.raw == nil {
		return unix.EpollCtl(epfd, op, s.fd, &ev)
	}
	y := &s.sys
	if y.ctl == nil {
		y.ctl = func(fd uintptr) { y.err = unix.EpollCtl(y.epfd, y.op, int(fd), &y.ev) }
	}
	y.epfd, y.op, y.ev, y.err = epfd, op, ev, nil
	if err := s.raw.Control(y.ctl); err != nil {
		return err
	}
	return y.err
}

// arm registers the socket of s (or arms it again) under ticket t. The
// epoll set reports a socket that is readable already at once.
func (p *poller) arm(s *Spot, t uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(t)}
	if s.sys.known {
		err := s.epollCtl(p.fd, unix.EPOLL_CTL_MOD, ev)
		if !errors.Is(err, unix.ENOENT) {
			return err
		}
		// Not in the set any more: added again.
	}
	err := s.epollCtl(p.fd, unix.EPOLL_CTL_ADD, ev)
	s.sys.known = err == nil
	return err
}

// disarm takes the socket of s out of the set. The socket may be closed
// already: closing it took it out.
func (p *poller) disarm(s *Spot) {
	s.epollCtl(p.fd, unix.EPOLL_CTL_DEL, unix.EpollEvent{})
	s.sys.known = false
}

// run waits for parked sockets to become readable and wakes their Spots,
// until the epoll set fails (it does not, short of a defect): then every
// parked Spot is woken and parking is off.
func (p *poller) run(l *Lot) {
	evs := make([]unix.EpollEvent, 256)
	tickets := make([]uint32, 0, len(evs))
	for {
		var n int
		var werr error
		err := p.raw.Read(func(fd uintptr) bool {
			n, werr = unix.EpollWait(int(fd), evs, 0)
			// Nothing ready: the runtime's poller waits until the
			// set is readable, and this runs again.
			return n != 0 || werr != nil
		})
		if errors.Is(werr, unix.EINTR) {
			continue
		}
		if err == nil {
			err = werr
		}
		if err != nil {
			p.f.Close()
			l.fail()
			return
		}
		tickets = tickets[:0]
		for _, ev := range evs[:n] {
			tickets = append(tickets, uint32(ev.Fd))
		}
		l.ready(tickets)
	}
}
