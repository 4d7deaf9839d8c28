package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/hugepages"
)

// ctlFD is the helper's end of the socket pair (its first extra file);
// ttyFD the run's own terminal, when it has one (the second).
const (
	ctlFD = 3
	ttyFD = 4
)

// In the helper, the main goroutine keeps the main thread, whose task is
// the process's leader (pid 1 of the run): the thread that takes the
// restrictions must be another one, so that the run's Landlock domain
// never reaches the process the run can name. Locking in an init
// function holds the main thread from the start (the runtime keeps it
// locked through initialization).
func init() {
	if len(os.Args) > 0 && os.Args[0] == helperName {
		runtime.LockOSThread()
	}
}

// Init turns the process into a run's helper when it was started as one
// by [Start], and then never returns. Call it first thing in main.
func Init() {
	if len(os.Args) == 0 || os.Args[0] != helperName {
		return
	}
	os.Exit(helper())
}

// helper is the first process of the run's namespaces: it sets up the
// mounts, starts the program on a thread that takes the restrictions,
// reports the program's pid, forwards signals, reaps every orphan, and
// ends with the program.
func helper() int {
	unix.CloseOnExec(ctlFD)
	unix.CloseOnExec(ttyFD)
	// Open as long as the run, as postern run: huge pages off, as
	// postern run's choice was handed on (its hugepages.ChildEnv), or
	// as the person set. Its memory is touched already by now; it does
	// not start again for the setting.
	hugepages.TurnOff()
	// The helper keeps capabilities in the run's namespaces: nothing of
	// the run may read or trace it.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	go endWithStarter()
	fail := func(err error, exec bool) int {
		sendReport(ctlFD, report{Error: err.Error(), Exec: exec}, 0)
		return 1
	}
	buf := make([]byte, maxMessage)
	n, err := unix.Read(ctlFD, buf)
	if err != nil || n == 0 {
		return 1
	}
	var s Spec
	if err := json.Unmarshal(buf[:n], &s); err != nil {
		return fail(fmt.Errorf("reading the instructions: %w", err), false)
	}
	if err := setUpMounts(&s); err != nil {
		return fail(err, false)
	}
	// Signals are caught before the program starts, so none is lost.
	sigs := make(chan os.Signal, 8)
	NotifyUnlessIgnored(sigs, append(JobStops, syscall.SIGCONT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGINT, syscall.SIGQUIT)...)
	type started struct {
		pid   int
		level Level
		err   error
		exec  bool
	}
	ch := make(chan started, 1)
	go func() {
		// This goroutine's thread takes the restrictions, and the program
		// is forked from it. It is never unlocked: the thread ends with
		// the goroutine, and the helper's other threads keep what they
		// need to report.
		runtime.LockOSThread()
		level, err := restrictThread(&s)
		if err != nil {
			ch <- started{err: err}
			return
		}
		attr := &os.ProcAttr{Dir: s.Dir, Env: s.Env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
		if s.Terminal {
			attr.Sys = foreground()
		}
		// The person's program, with the huge pages it would have
		// had: on for the process (prctl, which the restrictions
		// leave) while it is forked.
		restore := hugepages.Allow()
		p, err := os.StartProcess(s.Path, s.Args, attr)
		restore()
		if err != nil {
			ch <- started{err: err, exec: true}
			return
		}
		ch <- started{pid: p.Pid, level: level}
	}()
	st := <-ch
	if st.err != nil {
		return fail(st.err, st.exec)
	}
	if err := sendReport(ctlFD, report{Landlock: st.level.Landlock, NoSeccomp: st.level.NoSeccomp}, st.pid); err != nil {
		syscall.Kill(st.pid, syscall.SIGKILL)
		return 1
	}
	exited := make(chan exitReport, 1)
	stops := make(chan struct{}, 1)
	go reap(st.pid, s.Terminal, exited, stops)
	frozen := false
	for {
		select {
		case sig := <-sigs:
			switch {
			case slices.Contains(JobStops, sig) && s.Terminal && frozen:
				// Stopped already, and reported once (stops): with a
				// terminal of its own, both the program's stop and
				// postern run ask for one stop.
			case slices.Contains(JobStops, sig):
				// The job stops: the whole run stops (suspend_linux.go).
				freeze(st.pid)
				frozen = true
				sendReport(ctlFD, report{Stopped: true}, 0)
			case sig == syscall.SIGCONT:
				thaw()
				frozen = false
			case sig != syscall.SIGINT && sig != syscall.SIGQUIT,
				!s.Terminal && !TerminalMaySend():
				// SIGINT and SIGQUIT from the terminal reach the
				// program directly (it is in the same process group),
				// or through the run's own terminal; sent to postern
				// run alone, it passes them here.
				syscall.Kill(st.pid, sig.(syscall.Signal))
			}
		case <-stops:
			// The program stopped on its own terminal: the whole run
			// stops, and postern run with it. A stop the helper made
			// (freeze), or one that ended before it was seen, is not
			// one.
			if !frozen && stopped(st.pid) {
				freeze(st.pid)
				frozen = true
				sendReport(ctlFD, report{Stopped: true}, 0)
			}
		case ex := <-exited:
			sendReport(ctlFD, report{exitReport: ex}, 0)
			// Ending the helper ends every process left in the run.
			return 0
		}
	}
}

// endWithStarter ends the helper, and with it every process of the run
// (the helper is the first of its pid namespace), once the socket to
// the process that started it hangs up: that process is gone (killed,
// SIGKILL or the OOM killer, before the program's end), or it is done
// with the run. A run left behind would go on unwatched, its socket
// served by the gateway with no one to end it or report its end. The
// socket, unlike a parent-death signal, hangs up also when the starter
// died before the helper could ask for one, and not when only the
// starter's thread that forked the helper ends.
func endWithStarter() {
	fds := []unix.PollFd{{Fd: ctlFD}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			os.Exit(1)
		}
	}
}

// foreground puts the program in a process group of its own, the
// foreground one of the run's terminal, whose session the helper leads
// (Start): the helper, in the same session, keeps that group from being
// orphaned, so that the terminal's Ctrl-Z stops the program. (With
// Foreground, Ctty is the helper's descriptor, not the program's: the
// program gets the terminal as its controlling one, and as whichever
// standard descriptors it was given as.)
func foreground() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: ttyFD}
}

// reap waits for every child the helper inherits, and reports how the
// program (pid) ended, and, when untraced, each time it stopped.
func reap(pid int, untraced bool, exited chan<- exitReport, stops chan<- struct{}) {
	opts := 0
	if untraced {
		opts = unix.WUNTRACED
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, opts, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			exited <- exitReport{Exit: 1}
			return
		}
		if got == pid && ws.Stopped() {
			select {
			case stops <- struct{}{}:
			default:
			}
			continue
		}
		if got == pid && (ws.Exited() || ws.Signaled()) {
			if ws.Signaled() {
				exited <- exitReport{Signal: int(ws.Signal())}
			} else {
				exited <- exitReport{Exit: ws.ExitStatus()}
			}
			return
		}
	}
}

// restrictThread applies to the calling thread (and so to the program it
// forks) a session keyring of its own, no_new_privs, the Landlock rules,
// the seccomp filter, and drops every capability. It returns what is in
// force: the Landlock ABI, and whether there is a seccomp filter.
func restrictThread(s *Spec) (Level, error) {
	// A session keyring of the run's own: the person's (Kerberos caches,
	// ecryptfs passphrases) is out of reach. Where keyctl is missing
	// (ENOSYS) or filtered (EPERM: a container's seccomp profile), the
	// program, which inherits the filter, cannot reach any keyring either.
	if _, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 && e != unix.ENOSYS && e != unix.EPERM {
		return Level{}, fmt.Errorf("a session keyring of its own: %w", e)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return Level{}, fmt.Errorf("no_new_privs: %w", err)
	}
	abi, err := landlockThread(s)
	if err != nil {
		return Level{}, fmt.Errorf("Landlock: %w", err)
	}
	filtered, err := seccompThread(s.Terminal)
	if err != nil {
		return Level{}, fmt.Errorf("seccomp: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return Level{}, fmt.Errorf("dropping capabilities: %w", err)
	}
	return Level{Namespaces: true, Landlock: abi, NoSeccomp: !filtered}, nil
}

// dropCapabilities empties the thread's ambient, bounding, effective,
// permitted and inheritable sets, so that not even uid 0 (where it is
// mapped) gets a capability back by executing a program.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return err
	}
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err == unix.EINVAL {
			break
		} else if err != nil {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}
