package ptyrelay

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// A Relay is a run's private terminal, and the copying between it and
// the person's.
type Relay struct {
	pty    *os.File // the private terminal's master side (non-blocking)
	ptyFD  int      // its descriptor, for ioctls
	peer   *os.File // the program's side, until Start
	isTerm [3]bool  // which of the standard descriptors are terminals
	ttyFD  int      // the person's terminal, for its settings and size

	in   *os.File // the person's terminal opened again (non-blocking), to read what is typed
	out  *os.File // where the program's output goes: standard output or error, or input, whichever is the first terminal, or the controlling terminal
	ctty *os.File // the caller's controlling terminal, when opened (/dev/tty)

	mu      sync.Mutex
	saved   *term.State // the person's settings, while the terminal is raw
	started bool
	closed  bool

	suspend func()        // Start's
	idle    atomic.Bool   // the output goroutine waits in a read: all it read is written
	wake    chan struct{} // Continue: the caller may be the foreground job again
	done    chan struct{} // closed by Close
	outDone chan struct{} // the program's output ended
}

// backgroundPoll is how often input looks whether the caller is the
// foreground job again, besides being told by Continue: a shell brings a
// job that runs to the foreground without a signal.
const backgroundPoll = 100 * time.Millisecond

// afterTyped runs once what was typed is written to the program's
// terminal; tests make the program's answer come first.
var afterTyped = func() {}

// drainWait bounds how long Pause waits for the program's last output.
const drainWait = 250 * time.Millisecond

// closeWait bounds how long Close waits for every holder of the
// program's side to close it.
const closeWait = 2 * time.Second

// Open makes a private terminal for a program started with the standard
// descriptors std, with the person's terminal's settings and size, and
// returns nil when the caller has no terminal: none of std is one, and
// it has no controlling terminal (which the program would inherit, as
// /dev/tty). Nothing is copied before Start.
//
// What is typed is read from standard input when it is a terminal, else
// from the controlling terminal (a program asks there for a password);
// the program's output goes to the first of standard output, error and
// input that is a terminal, else to the controlling terminal.
func Open(std [3]*os.File) (*Relay, error) {
	r := &Relay{ttyFD: -1, wake: make(chan struct{}, 1), done: make(chan struct{}), outDone: make(chan struct{})}
	for i, f := range std {
		r.isTerm[i] = f != nil && term.IsTerminal(int(f.Fd()))
	}
	if !r.isTerm[0] {
		if f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY, 0); err == nil {
			r.ctty = f
		}
	}
	in, out := r.ctty, r.ctty
	if r.isTerm[0] {
		in, out = std[0], std[0]
	}
	switch {
	case r.isTerm[1]:
		out = std[1]
	case r.isTerm[2]:
		out = std[2]
	}
	if out == nil {
		return nil, nil
	}
	r.out, r.ttyFD = out, int(out.Fd())
	if in != nil {
		r.ttyFD = int(in.Fd())
	}
	fail := func(err error) (*Relay, error) {
		if r.ctty != nil {
			r.ctty.Close()
		}
		return nil, fmt.Errorf("making the run a terminal of its own: %w", err)
	}
	if err := r.openPty(); err != nil {
		return fail(err)
	}
	if in != nil {
		// A descriptor of its own, non-blocking: a read never waits in
		// the kernel, where it would go on reading once the shell has put
		// the caller in the background.
		f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", in.Fd()), os.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
		if err != nil {
			r.pty.Close()
			r.peer.Close()
			return fail(fmt.Errorf("opening the terminal again: %w", err))
		}
		r.in = f
	}
	return r, nil
}

// Terminal returns the program's side of the private terminal, to be its
// controlling terminal, until Start.
func (r *Relay) Terminal() *os.File {
	if r == nil {
		return nil
	}
	return r.peer
}

// openPty opens the private terminal, both sides, and gives it the
// person's terminal's settings and size.
func (r *Relay) openPty() error {
	m, p, err := OpenPair()
	if err != nil {
		return err
	}
	r.pty, r.peer = m, p
	if rc, err := m.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { r.ptyFD = int(fd) })
	}
	fail := func(op string, err error) error {
		r.pty.Close()
		r.peer.Close()
		return os.NewSyscallError(op, err)
	}
	t, err := unix.IoctlGetTermios(r.ttyFD, unix.TCGETS)
	if err != nil {
		return fail("tcgetattr", err)
	}
	sane(t)
	if err := unix.IoctlSetTermios(int(p.Fd()), unix.TCSETS, t); err != nil {
		return fail("tcsetattr", err)
	}
	r.Resize()
	return nil
}

// sane makes t what a program expects of its terminal when it starts:
// lines edited and echoed, Ctrl-C and Ctrl-Z signalling, output
// processed, with the person's own characters for each. The person's
// terminal need not be so when the run starts: started with &, the run
// finds the shell's line editor reading it, one key at a time, no echo.
func sane(t *unix.Termios) {
	t.Iflag |= unix.ICRNL
	t.Iflag &^= unix.INLCR | unix.IGNCR
	t.Oflag |= unix.OPOST | unix.ONLCR
	t.Lflag |= unix.ICANON | unix.ISIG | unix.IEXTEN | unix.ECHO | unix.ECHOE | unix.ECHOK | unix.ECHOCTL | unix.ECHOKE
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
}

// OpenPair opens a new pseudo-terminal: its master side (non-blocking:
// reads and writes wait in the runtime's poller, and Close ends them), and
// the other; both close-on-exec, neither the caller's controlling
// terminal.
func OpenPair() (master, peer *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err}
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(m)
		return nil, nil, os.NewSyscallError("unlockpt", err)
	}
	p, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(m)
		return nil, nil, os.NewSyscallError("ioctl TIOCGPTPEER", errno)
	}
	return os.NewFile(uintptr(m), "/dev/ptmx"), os.NewFile(p, "pty"), nil
}

// Files returns the program's standard descriptors: std, with the private
// terminal in place of each that is a terminal.
func (r *Relay) Files(std [3]*os.File) [3]*os.File {
	if r == nil {
		return std
	}
	for i := range std {
		if r.isTerm[i] {
			std[i] = r.peer
		}
	}
	return std
}

// Start begins copying, once the program holds its side of the private
// terminal (the relay's own copy closes): the program's output to the
// person's terminal, and, when there is a terminal to read (Open), what
// the person types to the program, the terminal raw while the caller is
// its foreground job. suspend, when not nil, is called each time the person
// types the character with which the run's terminal stops its job
// (Ctrl-Z, while the terminal signals): the terminal's signal reaches
// the program's group only, which may ignore it, and the caller sees to
// the job.
func (r *Relay) Start(suspend func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.started, r.suspend = true, suspend
	r.peer.Close()
	r.mu.Unlock()
	// Read from the background, the terminal answers EIO, and written
	// to, takes the output: neither stops the caller's job (nor, through
	// the job's process group, anything else in it).
	signal.Ignore(syscall.SIGTTIN, syscall.SIGTTOU)
	go r.output()
	if r.in != nil {
		r.take()
		go r.input()
	}
}

// output copies the program's output until every holder of its side of
// the private terminal closed it (the master then reads EIO).
func (r *Relay) output() {
	defer close(r.outDone)
	buf := make([]byte, 32<<10)
	broken := false
	for {
		r.idle.Store(true)
		n, err := r.pty.Read(buf)
		r.idle.Store(false)
		if n > 0 && !broken && r.mayWrite() {
			// A terminal that went away: what follows is read and
			// dropped, so that the program never blocks on its own.
			_, werr := r.out.Write(buf[:n])
			broken = werr != nil
		}
		if err != nil {
			return
		}
	}
}

// mayWrite waits, before the program's output is written, while the
// person's terminal has tostop set and the caller is not its foreground
// job: a job in the background may not write there then (the kernel
// would stop it with SIGTTOU, which the relay ignores), and the run is
// such a job. Meanwhile nothing more is read of the program's output, so
// that the program waits once the private terminal's buffer is full. It
// reports false when Close is called first: the output is dropped.
func (r *Relay) mayWrite() bool {
	fd := int(r.out.Fd())
	for {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil || t.Lflag&unix.TOSTOP == 0 {
			return true
		}
		if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || pg == unix.Getpgrp() {
			return true
		}
		select {
		case <-r.done:
			return false
		case <-time.After(backgroundPoll):
		}
	}
}

// input copies what the person types to the program, while the caller is
// the terminal's foreground job.
func (r *Relay) input() {
	buf := make([]byte, 4096)
	for {
		n, err := r.in.Read(buf)
		if n > 0 {
			// Whether a suspend character is a stop is read before it
			// is written: after, the program may have answered it
			// already (a line read, then stty -isig).
			stop := r.suspend != nil && r.suspends(buf[:n])
			if _, err := r.pty.Write(buf[:n]); err != nil {
				return
			}
			afterTyped()
			if stop {
				r.suspend()
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, syscall.EIO):
			// In the background: what is typed is the shell's.
			select {
			case <-r.wake:
			case <-time.After(backgroundPoll):
			case <-r.done:
				return
			}
			r.take()
		default:
			return // closed, or the terminal hung up
		}
	}
}

// suspends reports whether typed holds the run's terminal's suspend
// character, while the terminal turns it into a stop signal.
func (r *Relay) suspends(typed []byte) bool {
	var t *unix.Termios
	err := error(unix.EBADF)
	// On a master side, the termios are the other side's.
	r.ptyControl(func(fd int) { t, err = unix.IoctlGetTermios(fd, unix.TCGETS) })
	return err == nil && t.Lflag&unix.ISIG != 0 && t.Cc[unix.VSUSP] != 0 && bytes.IndexByte(typed, t.Cc[unix.VSUSP]) >= 0
}

// ptyControl runs f on the private terminal's master descriptor, unless
// Close closed it (the number may be another file's then).
func (r *Relay) ptyControl(f func(fd int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		f(r.ptyFD)
	}
}

// foreground reports whether the caller is the foreground job of the
// person's terminal (always, when it is not the caller's controlling
// terminal: no job control applies then).
func (r *Relay) foreground() bool {
	pg, err := unix.IoctlGetInt(r.ttyFD, unix.TIOCGPGRP)
	return err != nil || pg == unix.Getpgrp()
}

// Pause gives the person's terminal back its settings, once the
// program's output so far is written: call it before the caller stops.
func (r *Relay) Pause() {
	if r == nil {
		return
	}
	r.drain()
	r.restore()
}

// drain waits, at most drainWait, until the private terminal holds no
// output and what was read from it is written.
func (r *Relay) drain() {
	settled := false
	for deadline := time.Now().Add(drainWait); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		n, err := 0, error(unix.EBADF)
		r.ptyControl(func(fd int) { n, err = unix.IoctlGetInt(fd, unix.TIOCINQ) })
		if err != nil || settled && n == 0 && r.idle.Load() {
			return
		}
		settled = n == 0 && r.idle.Load()
	}
}

func (r *Relay) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved != nil {
		term.Restore(r.ttyFD, r.saved)
		r.saved = nil
	}
}

// Continue takes the person's terminal again (raw) when the caller is
// its foreground job, and copies its size: call it when the caller is
// continued.
func (r *Relay) Continue() {
	if r == nil {
		return
	}
	r.take()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take copies the person's terminal's size, and takes the terminal (raw)
// when input is relayed and the caller is its foreground job.
func (r *Relay) take() {
	r.Resize()
	if r.in == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started && !r.closed && r.saved == nil && r.foreground() {
		if st, err := term.MakeRaw(r.ttyFD); err == nil {
			r.saved = st
		}
	}
}

// Resize gives the private terminal the person's terminal's size (the
// kernel tells the program with SIGWINCH).
func (r *Relay) Resize() {
	if r == nil {
		return
	}
	if ws, err := unix.IoctlGetWinsize(r.ttyFD, unix.TIOCGWINSZ); err == nil {
		r.ptyControl(func(fd int) { unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) })
	}
}

// Signal sends sig to the foreground process group of the run's
// terminal, as a terminal does for its interrupt and quit characters:
// when input is not relayed, the person's terminal signals the caller's
// job (the caller), not the run's terminal.
func (r *Relay) Signal(sig syscall.Signal) {
	if r == nil {
		return
	}
	r.ptyControl(func(fd int) { unix.IoctlSetInt(fd, unix.TIOCSIG, int(sig)) })
}

// Close waits, at most closeWait, for the program's output to end (every
// process of the run gone), and gives the person's terminal back its
// settings.
func (r *Relay) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true // Continue takes the terminal no more
	started := r.started
	if !started {
		r.peer.Close()
	}
	r.mu.Unlock()
	if r.in != nil {
		// Nothing more is read from the person's terminal: what is
		// typed from now on is the shell's.
		r.in.Close()
	}
	if started {
		select {
		case <-r.outDone:
		case <-time.After(closeWait):
		}
	}
	r.restore()
	close(r.done)
	r.pty.Close()
	if r.ctty != nil {
		r.ctty.Close()
	}
}
