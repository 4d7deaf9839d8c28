package approvals

import (
	"fmt"

	"github.com/postern/postern/internal/procid"
)

// launchedByRun checks, for [Engine.Restore], that p is still what
// "postern run" launched, as StartRun checked it: the child of a
// "postern run" process, or, when confined, the child of its helper,
// itself the child of "postern run". The display context is the user's
// to write, and could name any process of theirs: their login shell, or
// the service manager every program of theirs descends from, whose run,
// once approved again on a card that says only that the gateway
// restarted, would cover all they start. Parentage is the kernel's, and
// no program can make itself or another the child of a process after
// the fact.
//
// A "postern run" process is told by its arguments ("run" first) and its
// executable: postern's own (the same file as e.executable), or hidden,
// as postern makes itself non-dumpable (package harden) and the
// executable of a non-dumpable process cannot be read. A process of the
// user can make itself non-dumpable and name itself anything, but not
// the parent of a process that exists.
func (e *Engine) launchedByRun(p *procid.Peer, confined bool) error {
	parent, err := inspectLauncher(e, p.PPID)
	if err != nil {
		return fmt.Errorf("its parent (pid %d): %w", p.PPID, err)
	}
	if confined {
		// The helper is postern too, but may show an executable an
		// upgrade replaced since; what proves it is its own parent,
		// whose children are runs and their helpers alone.
		if parent.StartTicks > p.StartTicks {
			return fmt.Errorf("its parent (pid %d) is not the helper of a confined run", parent.PID)
		}
		helper := parent
		if parent, err = inspectLauncher(e, helper.PPID); err != nil {
			return fmt.Errorf("its helper's parent (pid %d): %w", helper.PPID, err)
		}
	}
	argv := e.procs.Argv(parent.PID)
	if parent.UID != p.UID || parent.StartTicks > p.StartTicks ||
		len(argv) < 2 || argv[1] != "run" || !e.isPostern(parent.Exe) {
		return fmt.Errorf("pid %d was not launched by \"postern run\": its launcher (pid %d) is not one", p.PID, parent.PID)
	}
	return nil
}

// inspectLauncher reads the facts of a restored run's parent or helper
// (tests make it fail as a shortage of descriptors does).
var inspectLauncher = func(e *Engine, pid int) (procid.Process, error) { return e.procs.Inspect(pid) }

// isPostern reports whether exe is postern's: hidden, or the same file
// as e.executable (this process's when zero).
func (e *Engine) isPostern(exe procid.Exe) bool {
	if exe.Hidden {
		return true
	}
	self := e.executable
	if self == (procid.Exe{}) {
		self, _, _ = e.procs.ExeID(e.selfPID)
	}
	return self.Ino != 0 && exe.Dev == self.Dev && exe.Ino == self.Ino
}
