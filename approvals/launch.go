package approvals

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/procid"
)

// registerTimeout bounds how long a run's socket holds a connection while
// "postern run" has not yet reported the launched process.
const registerTimeout = 10 * time.Second

// PrepareRun reserves a run for "postern run": an id, a label (display
// only) and a launch nonce. The gateway creates the run's socket at
// socket; StartRun then binds the run to the launched process. preparer
// is the verified "postern run" process: until the run is started, its
// descendants and its terminal session count as inside the run, since
// the command it launches runs before the gateway registers it.
func (e *Engine) PrepareRun(label string, preparer procid.Process, socket func(id string) string) *Run {
	run := &Run{ID: newRunID(), Label: label, Nonce: randomHex(16), Launched: true, preparer: preparer, ready: make(chan struct{})}
	run.Socket = socket(run.ID)
	e.mu.Lock()
	e.runs[run.ID] = run
	e.mu.Unlock()
	time.AfterFunc(prepareTimeout, func() { e.expireIfPending(run.ID) })
	return run
}

// EndIfNeverStarted ends a prepared run when preparer, the "postern run"
// process that prepared it, exits before reporting the process it
// launched (the command could not be started, or postern run was
// killed): nothing of it is left, its socket included.
func (e *Engine) EndIfNeverStarted(run *Run, preparer *procid.Peer) {
	defer preparer.Close()
	exited := preparer.Exited()
	if exited == nil {
		return
	}
	expired := time.NewTimer(prepareTimeout)
	defer expired.Stop()
	select {
	case <-run.ready:
	case <-expired.C:
		// PrepareRun's timer ends it: the preparer is not held longer.
	case <-exited:
		select {
		case <-run.ready:
		default:
			e.log.Info("run never started: postern run exited first", "run", run.ID)
			e.EndRun(run.ID, audit.ReasonProcessExited)
		}
	}
}

// StartRun binds run id to the process "postern run" launched. caller is
// the verified "postern run" process, the one that prepared the run; pid
// is inspected now, after its
// exec. An unconfined pid must be the caller's child. A confined one
// (level.Namespaces) must be the child of the run's helper, itself the
// caller's child, and live in user, pid and mount namespaces other than
// the gateway's, in a user namespace the gateway's user created: the
// gateway reads them now and checks answers against them.
func (e *Engine) StartRun(id string, pid int, caller *procid.Peer, level confine.Level) (*Run, error) {
	e.mu.Lock()
	run := e.runs[id]
	started := run != nil && run.pin != nil
	e.mu.Unlock()
	if run == nil || !run.Launched {
		return nil, fmt.Errorf("no prepared run %q", id)
	}
	if started {
		return nil, errStarted(id)
	}
	// Refused, not ended: any process of the user can list the runs, and
	// neither binding a person's run to a child of its own nor ending it
	// is its to do.
	if p := run.preparer; caller.PID != p.PID || caller.StartTicks != p.StartTicks {
		return nil, fmt.Errorf("run %s was prepared by another process (pid %d), not by the caller (pid %d)", id, p.PID, caller.PID)
	}
	// Reported as soon as its exec succeeded, the process may still be
	// laying out its address space.
	pin, err := e.procs.PinLaunched(pid)
	if err != nil {
		e.EndRun(id, audit.ReasonProcessExited)
		return nil, fmt.Errorf("the launched process is gone: %w", err)
	}
	refuse := func(err error) (*Run, error) {
		pin.Close()
		e.EndRun(id, audit.ReasonIdentityMismatch)
		return nil, err
	}
	var ns procid.Namespaces
	if level.Namespaces {
		if ns, err = e.confined(pin, caller); err != nil {
			return refuse(err)
		}
	} else if pin.PPID != caller.PID || pin.StartTicks < caller.StartTicks {
		return refuse(fmt.Errorf("pid %d is not a child of the caller (pid %d)", pid, caller.PID))
	}
	e.mu.Lock()
	// The run may have ended meanwhile (its preparer exited): it is not
	// registered after its end, and holds nothing of the process.
	if why := run.Ended(); why != "" {
		e.mu.Unlock()
		pin.Close()
		return nil, runEnded(id, why)
	}
	// Another start of the run, under way at the same time, bound it
	// first: the run keeps that process.
	if run.pin != nil {
		e.mu.Unlock()
		pin.Close()
		return nil, errStarted(id)
	}
	run.Process, run.pin, run.Started = pin.Process, pin, e.now()
	run.Confinement, run.NS = level, ns
	run.Argv = e.procs.Argv(pid)
	// Kept for the next gateway from now on, not only when this one
	// stops: one killed (kill -9, the OOM killer) never does.
	e.serveAgainLocked(run, "", time.Time{})
	e.savePastLocked()
	e.mu.Unlock()
	close(run.ready)
	e.endOnExit(run)
	e.log.Info("run registered", "run", id, "label", run.Label, "pid", pid, "exe", pin.Exe.Path, "sha256", pin.Exe.Hash(), "confinement", level.String())
	e.recordRun(run)
	return run, nil
}

// errStarted refuses a start of run id, which is bound to its process
// already.
func errStarted(id string) error { return fmt.Errorf("run %s is already started", id) }

// confined checks the process of a confined run and returns its
// namespaces.
func (e *Engine) confined(pin, caller *procid.Peer) (procid.Namespaces, error) {
	helper, err := e.procs.Stat(pin.PPID)
	if err != nil || helper.PPID != caller.PID || helper.StartTicks < caller.StartTicks || pin.StartTicks < helper.StartTicks {
		return procid.Namespaces{}, fmt.Errorf("pid %d is not the child of a helper the caller (pid %d) started", pin.PID, caller.PID)
	}
	return e.ownNamespaces(pin)
}

// ownNamespaces returns the namespaces of pin, a process said to be
// confined, when they are its own: user, pid and mount namespaces other
// than the gateway's, in a user namespace the gateway's user created.
func (e *Engine) ownNamespaces(pin *procid.Peer) (procid.Namespaces, error) {
	ns, err := pin.Namespaces()
	if err != nil {
		return procid.Namespaces{}, fmt.Errorf("reading the run's namespaces: %w", err)
	}
	if ns.User == e.ownNS.User || ns.PID == e.ownNS.PID || ns.Mnt == e.ownNS.Mnt {
		return procid.Namespaces{}, fmt.Errorf("pid %d is said to be confined but shares namespaces with the gateway", pin.PID)
	}
	if owner, err := pin.NamespaceOwner(); err != nil || owner != os.Geteuid() {
		return procid.Namespaces{}, fmt.Errorf("pid %d: its user namespace was not created by the gateway's user", pin.PID)
	}
	return ns, nil
}

// recordRun records the identity facts a run was registered with.
func (e *Engine) recordRun(run *Run) { e.record(runRegistered(e.procs, run)) }

// runRegistered is the event of run's registration.
func runRegistered(t *procid.Table, run *Run) audit.Event {
	return audit.Event{
		Type: audit.EventRunRegistered, Run: run.ID, Label: run.Label, Process: auditProcess(t, &run.Process),
		Detail: map[string]string{"launched": strconv.FormatBool(run.Launched), "previous_boot": run.PrevBoot, "confinement": run.Confinement.String()},
	}
}

// ErrNotDescendant refuses a client of a run's socket that is not the
// run's process or one of its live descendants.
var ErrNotDescendant = errors.New("not the run's process or a live descendant of it")

// AdmitRun returns the check for clients of run id's socket: only the
// run's live descendants are served. A client that connects before the
// launched process is registered waits for it.
func (e *Engine) AdmitRun(id string) func(*procid.Peer) error {
	return func(p *procid.Peer) error {
		e.mu.Lock()
		run := e.runs[id]
		e.mu.Unlock()
		if run == nil {
			return fmt.Errorf("run %s has ended", id)
		}
		if run.ready != nil {
			select {
			case <-run.ready:
			case <-time.After(registerTimeout):
				return fmt.Errorf("run %s was never started", id)
			}
		}
		if reason, ok := run.check(); !ok {
			e.endFailed(id, reason)
			return runFailed(id, reason)
		}
		if ok, _ := e.procs.DescendsFrom(p.PID, p.StartTicks, &run.Process); !ok {
			return fmt.Errorf("pid %d: %w", p.PID, ErrNotDescendant)
		}
		return nil
	}
}

// Restore reads the display context an earlier gateway left and returns
// the runs "postern run" launched that are still alive — the same process,
// as the kernel shows it now — so that the gateway can serve their sockets
// again. Each restored run gets a new launch nonce and no grant: it must be
// approved again, and its card says the gateway restarted.
func (e *Engine) Restore() []*Run {
	past, err := loadPast(e.contextFile)
	if err != nil {
		// Display context only: the runs it names are not offered again,
		// and what changed is said without it.
		e.log.Warn("display context from the last gateway not read", "path", e.contextFile, "err", err)
	}
	e.mu.Lock()
	e.past = past
	e.mu.Unlock()
	// A run whose process is gone, or another, is never served again:
	// its entry goes.
	ended := func(sock string) {
		e.mu.Lock()
		e.forgetSocketLocked(sock)
		e.mu.Unlock()
	}
	var out []*Run
	// A copy: a run restored may end, and be forgotten, meanwhile.
	for _, p := range slices.Clone(past) {
		if p.Socket == "" || p.BootID == e.bootID {
			continue
		}
		pin, err := e.procs.Pin(p.PID)
		if err != nil {
			if !errors.Is(err, procid.ErrNoResources) {
				ended(p.Socket)
			}
			continue
		}
		// The same process, running the program it ran: an exec while
		// no gateway ran (even of the same executable) placed another.
		// A file from before layouts were kept names none.
		if pin.StartTicks != p.Start || pin.Exe.Dev != p.ExeDev || pin.Exe.Ino != p.ExeIno || p.Layout != (procid.Layout{}) && pin.Layout != p.Layout {
			pin.Close()
			ended(p.Socket)
			continue
		}
		// The file is the user's: a run it says was confined is so only
		// in namespaces of its own, as StartRun checks them, and its
		// process must be what "postern run" launched.
		// Neither is judged without descriptors or memory to read the
		// process with: the run is kept for a later restore, as above.
		ns, err := e.ownNamespaces(pin)
		confined := err == nil && p.NS.Known() && ns == p.NS
		if !errors.Is(err, procid.ErrNoResources) {
			err = e.launchedByRun(pin, confined)
		}
		if err != nil {
			pin.Close()
			if !errors.Is(err, procid.ErrNoResources) {
				e.log.Warn("a run in the display context is not served again", "socket", p.Socket, "err", err)
				ended(p.Socket)
			}
			continue
		}
		// A new run id and nonce: the gateway has not bound this run.
		run := &Run{
			ID: newRunID(), Label: p.Label, Nonce: randomHex(16), Process: pin.Process, Argv: e.procs.Argv(p.PID),
			Launched: true, Socket: p.Socket, Started: e.now(), PrevBoot: p.BootID, pin: pin,
			preparer: procid.Process{Session: p.LauncherSession},
		}
		if confined {
			run.Confinement, run.NS = p.Confinement, ns
		}
		e.addRun(run)
		e.recordRun(run)
		out = append(out, run)
	}
	return out
}

// Stop records the refusals counted and not yet recorded, records the
// live runs launched by "postern run", so that the next gateway can serve
// their sockets again (and say it restarted), and forgets every grant.
// The display context is not written after it: the gateway lets its
// state directory go once it has stopped.
func (e *Engine) Stop() {
	e.flushAllRefusals()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for id, g := range e.grants {
		e.endGrantLocked(id, g, audit.ReasonGatewayStopped)
	}
	for _, run := range e.runs {
		if run.Launched && run.pin != nil && run.Ended() == "" {
			e.serveAgainLocked(run, audit.ReasonGatewayStopped, now)
		}
	}
	e.savePastLocked()
	e.pastSaved = true
}
