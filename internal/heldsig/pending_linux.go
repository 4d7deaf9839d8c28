package heldsig

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// wordBits is the number of signals a word of unix.Sigset_t holds.
const wordBits = 8 * unsafe.Sizeof(unix.Sigset_t{}.Val[0])

// kernelSetSize is the size of the kernel's signal set, which
// rt_sigtimedwait takes: 64 signals.
const kernelSetSize = 8

func setOf(sigs []syscall.Signal) unix.Sigset_t {
	var set unix.Sigset_t
	for _, s := range sigs {
		n := uint(s) - 1
		set.Val[n/uint(wordBits)] |= 1 << (n % uint(wordBits))
	}
	return set
}

func inSet(set *unix.Sigset_t, s syscall.Signal) bool {
	n := uint(s) - 1
	return set.Val[n/uint(wordBits)]&(1<<(n%uint(wordBits))) != 0
}

// takePending takes s from the signals pending for the process, and
// reports whether it was pending. It never waits.
func takePending(s syscall.Signal) bool {
	set := setOf([]syscall.Signal{s})
	var now unix.Timespec
	for {
		r, _, errno := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), 0, uintptr(unsafe.Pointer(&now)), kernelSetSize, 0, 0)
		// The runtime's own signals (preemption) interrupt the
		// call: it is made again.
		if errno == syscall.EINTR {
			continue
		}
		return errno == 0 && syscall.Signal(r) == s
	}
}

// A pending is told when a held signal is pending: a signalfd for the
// signals that nothing reads, whose descriptor the runtime's poller
// reports readable when one is. The signal is taken with takePending,
// under the queue's lock.
type pending struct {
	f  *os.File
	rc syscall.RawConn
}

func watchPending(sigs []syscall.Signal) (*pending, error) {
	set := setOf(sigs)
	fd, err := unix.Signalfd(-1, &set, unix.SFD_NONBLOCK|unix.SFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "signalfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pending{f: f, rc: rc}, nil
}

// wait calls take at once and each time a held signal is reported
// pending, until close.
func (p *pending) wait(take func()) {
	p.rc.Read(func(uintptr) bool {
		take()
		return false
	})
}

func (p *pending) close() { p.f.Close() }
