package confine

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/procid"
)

// Suspending a run. The terminal stops a job (Ctrl-Z, or a read or write
// from the background) by signalling its process group, but a program of
// the run that left the group (setsid) keeps the terminal open, and a
// process whose controlling terminal it is not reads it with no job
// control: left running while the person is back at the shell, it would
// read what the person types there. So a stopped run is stopped whole:
// the helper stops every process of the run's pid namespace, and
// continues them when the job is continued.

// selfStopWait is how long the helper lets the program stop itself (a
// full-screen program first gives the terminal back its settings) before
// it stops every process of the run regardless.
const selfStopWait = 500 * time.Millisecond

// stopSettleWait bounds how long the helper waits, once it has sent the
// stop, to see every process of the run stopped. A process in a system
// call stops only when the call returns, and the disk can hold a write
// (fsync) up for a while; reported stopped before, the run would go on
// with the person back at the shell. Past the wait the run is reported
// stopped all the same: what has not stopped yet is in the kernel, and
// stops before it runs any more of its program.
const stopSettleWait = 3 * time.Second

// StopWait is the longest the helper takes to stop a run whole and say
// so, the program not stopping itself: selfStopWait, then
// stopSettleWait.
const StopWait = selfStopWait + stopSettleWait

// freeze stops every process of the run but the helper, once the
// program pid has stopped on its own or selfStopWait has passed, and
// returns once each is seen stopped (or stopSettleWait has passed). It
// runs in the helper, the run's pid 1, to which kill(-1) does not apply,
// and whose /proc is the run's.
func freeze(pid int) {
	deadline := time.Now().Add(selfStopWait)
	for !stoppedOrGone(pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	unix.Kill(-1, unix.SIGSTOP)
	deadline = time.Now().Add(stopSettleWait)
	for !everyStopped("/proc") && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}

// thaw continues every process of the run.
func thaw() { unix.Kill(-1, unix.SIGCONT) }

// everyStopped reports whether every process of the proc file system at
// root but the first (the helper) has stopped or ended: each thread of
// it, since a stop reaches each on its own. What cannot be read has
// ended.
func everyStopped(root string) bool {
	procs, _ := os.ReadDir(root)
	for _, p := range procs {
		if pid, err := strconv.Atoi(p.Name()); err != nil || pid == 1 {
			continue
		}
		tasks := filepath.Join(root, p.Name(), "task")
		threads, _ := os.ReadDir(tasks)
		for _, th := range threads {
			b, err := os.ReadFile(filepath.Join(tasks, th.Name(), "stat"))
			if err != nil {
				continue
			}
			if st, err := procid.ParseStat(b); err == nil && !halted(st.State) {
				return false
			}
		}
	}
	return true
}

// halted reports whether a process state is stopped (T, or t by a
// tracer) or ended (Z, X).
func halted(state byte) bool { return bytes.IndexByte([]byte("TtZX"), state) >= 0 }

// stoppedOrGone reports whether process pid is stopped, or no longer
// runs.
func stoppedOrGone(pid int) bool {
	st := procState(pid)
	return st == 0 || halted(st)
}

// stopped reports whether process pid is stopped, and not yet gone.
func stopped(pid int) bool {
	st := procState(pid)
	return st == 'T' || st == 't'
}

// procState returns the state of process pid (R, S, T, Z, ...), or 0
// when it cannot be read.
func procState(pid int) byte {
	st, err := procid.Host.Stat(pid)
	if err != nil {
		return 0
	}
	return st.State
}

// Suspend stops the whole run, as the terminal stopping its job with sig
// asks: it returns once every process of the run is stopped (or the run
// ended, or the helper did not answer in time). The caller then stops
// itself, and calls Resume once continued.
func (r *Run) Suspend(sig os.Signal) {
	select {
	case <-r.stopped:
	default:
	}
	if r.Helper.Signal(sig) != nil {
		return
	}
	select {
	case <-r.stopped:
	case <-r.done:
	case <-time.After(selfStopWait + stopReportWait):
	}
}

// stopReportWait is how long, past selfStopWait, Suspend waits for the
// helper to report the run stopped. The caller stops itself when it
// returns, and the person's shell then says the job stopped: a run still
// going on then reads what the person types at the shell. So the wait is
// long enough for a machine under load (a second was passed once, with
// the shell back and the run still writing), and bounded only so that a
// helper that no longer answers cannot keep the person from their shell.
const stopReportWait = 5 * time.Second

// Resume continues every process of a suspended run.
func (r *Run) Resume() { r.Helper.Signal(syscall.SIGCONT) }
