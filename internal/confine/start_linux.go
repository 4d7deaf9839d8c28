package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/hugepages"
	"github.com/postern/postern/internal/startagain"
)

// procSys is where the kernel's settings are read; tests point it at a
// fake tree.
var procSys = "/proc/sys"

// Available reports whether runs can be confined here: it reads the
// settings that disable user namespaces. It cannot see every obstacle
// (an AppArmor restriction shows only when the helper tries to mount);
// [Start] reports those.
func Available() error {
	if c := cause(); c != "" {
		return &UnavailableError{Op: "user namespaces are not available", Cause: c}
	}
	return nil
}

// cause names the system setting that keeps this process from creating a
// user namespace with capabilities in it, or "".
func cause() string { return causeFor(os.Geteuid()) }

func causeFor(euid int) string { return Cause(procSys, euid) }

// Cause names the system setting, read under sys (/proc/sys), that keeps
// a process of euid from creating a user namespace with capabilities in
// it, or "": what [Available] reports, for postern doctor to say too.
func Cause(sys string, euid int) string {
	setting := func(name string) (int, bool) { return readSetting(sys, name) }
	if v, ok := setting("user/max_user_namespaces"); ok && v == 0 {
		return "user namespaces are disabled: user.max_user_namespaces = 0"
	}
	if euid == 0 {
		return ""
	}
	if v, ok := setting("kernel/unprivileged_userns_clone"); ok && v == 0 {
		return "unprivileged user namespaces are disabled: kernel.unprivileged_userns_clone = 0"
	}
	if v, ok := setting("kernel/apparmor_restrict_unprivileged_userns"); ok && v != 0 {
		return "AppArmor restricts unprivileged user namespaces: kernel.apparmor_restrict_unprivileged_userns = 1; an AppArmor profile for postern must allow userns"
	}
	return ""
}

func readSetting(sys, name string) (int, bool) {
	b, err := os.ReadFile(sys + "/" + name)
	if err != nil {
		return 0, false
	}
	var v int
	if _, err := fmt.Sscan(string(b), &v); err != nil {
		return 0, false
	}
	return v, true
}

// A Run is a started confined run.
type Run struct {
	// PID is the program's pid as this process sees it (the kernel
	// translated it from the run's pid namespace).
	PID int
	// Helper is the run's first process, the program's parent.
	Helper *os.Process
	Level  Level

	ctl     *os.File
	cmd     *exec.Cmd
	done    chan struct{}
	stopped chan struct{} // the helper reported the run stopped (Suspend)
	res     exitReport
	werr    error
}

// startTimeout bounds how long the helper may take to report the
// program's pid.
const startTimeout = 30 * time.Second

// Start launches s.Path confined, with stdin, stdout and stderr given,
// and tty, when not nil, as the run's controlling terminal, a terminal of
// its own ([Spec.Terminal]; without one, the run shares the caller's). It
// returns once the program runs (after its exec), or an error: an
// [*UnavailableError] when the namespaces cannot be created or set up.
func Start(s *Spec, stdin, stdout, stderr, tty *os.File) (*Run, error) {
	s.Terminal = tty != nil
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot confine the run: %w", err)
	}
	// Non-blocking, so that reads from the helper can time out.
	unix.SetNonblock(fds[0], true)
	ctl, child := os.NewFile(uintptr(fds[0]), "confine"), os.NewFile(uintptr(fds[1]), "confine-helper")
	defer child.Close()
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		ctl.Close()
		return nil, fmt.Errorf("cannot confine the run: %w", err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{helperName},
		// None of the person's environment; only whether huge pages
		// are off by postern's choice, not the person's (the helper
		// turns them on for the program), and the name ps shows,
		// where the kernel's would be "exe".
		Env:        append(hugepages.ChildEnv(), startagain.NameEnv()),
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: []*os.File{child},
		SysProcAttr: &syscall.SysProcAttr{
			// An IPC namespace of its own: the person's System V shared
			// memory (X11 images), semaphores and message queues, and
			// POSIX message queues, are out of reach.
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			// Mounting and reporting the program's pid need these in the
			// helper; the program gets none (see restrictThread).
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP},
		},
	}
	if tty != nil {
		// The helper leads the session of the run's terminal.
		cmd.ExtraFiles = append(cmd.ExtraFiles, tty)
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, ttyFD
	}
	if err := cmd.Start(); err != nil {
		ctl.Close()
		return nil, &UnavailableError{Op: "creating the run's namespaces", Err: unwrapExec(err), Cause: cause()}
	}
	r := &Run{Helper: cmd.Process, ctl: ctl, cmd: cmd, done: make(chan struct{}), stopped: make(chan struct{}, 1)}
	fail := func(err error) (*Run, error) {
		cmd.Process.Kill()
		cmd.Wait()
		ctl.Close()
		return nil, err
	}
	spec, err := json.Marshal(s)
	if err != nil {
		return fail(err)
	}
	if _, err := ctl.Write(spec); err != nil {
		return fail(fmt.Errorf("cannot confine the run: sending the helper its instructions: %w", err))
	}
	ctl.SetReadDeadline(time.Now().Add(startTimeout))
	rep, pid, err := readReport(ctl)
	ctl.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		return fail(fmt.Errorf("cannot confine the run: the helper did not report: %w", err))
	case rep.Error != "":
		var e error = &UnavailableError{Op: rep.Error, Cause: cause()}
		if rep.Exec {
			e = fmt.Errorf("%s: %s", s.Path, rep.Error)
		}
		return fail(e)
	case pid <= 0:
		return fail(errors.New("cannot confine the run: the helper reported no process"))
	}
	r.PID = pid
	r.Level = Level{Namespaces: true, Landlock: rep.Landlock, NoSeccomp: rep.NoSeccomp}
	go r.wait()
	return r, nil
}

func unwrapExec(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Stops receives when the helper reports the whole run stopped: asked
// by [Run.Suspend], or because the program stopped on a terminal of the
// run's own ([Spec.Terminal]).
func (r *Run) Stops() <-chan struct{} { return r.stopped }

// Signal sends sig to the program (through the helper, which forwards
// it).
func (r *Run) Signal(sig os.Signal) error { return r.Helper.Signal(sig) }

// Exited reports whether the program has ended, waiting up to d for the
// helper to say so.
func (r *Run) Exited(d time.Duration) bool {
	select {
	case <-r.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Wait waits for the program to end and returns the exit status its
// caller should pass on: its exit code, or 128 plus the signal that ended
// it.
func (r *Run) Wait() (int, error) {
	<-r.done
	if r.werr != nil {
		return 1, r.werr
	}
	if r.res.Signal > 0 {
		return 128 + r.res.Signal, nil
	}
	return r.res.Exit, nil
}

func (r *Run) wait() {
	defer close(r.done)
	rep, _, rerr := readReport(r.ctl)
	for rerr == nil && rep.Stopped {
		select {
		case r.stopped <- struct{}{}:
		default:
		}
		rep, _, rerr = readReport(r.ctl)
	}
	r.ctl.Close()
	if rerr == nil && rep.Error == "" {
		// The helper reported the program's end; tearing down the run's
		// namespaces (killing what is left, unmounting) goes on without
		// the caller waiting for it.
		r.res = rep.exitReport
		go r.cmd.Wait()
		return
	}
	err := r.cmd.Wait()
	if rerr == nil {
		r.werr = fmt.Errorf("confined run: %s", rep.Error)
	} else {
		r.werr = fmt.Errorf("confined run: the helper ended without a report (%v)", err)
	}
}
