package approvals

import (
	"context"
	"time"

	"github.com/postern/postern/internal/procid"
)

// An Approver is a way to reach a person with a card besides the console
// ("postern approve"): a desktop notification, an askpass dialog.
type Approver interface {
	// Name names the channel in status and logs.
	Name() string
	// Reachable reports whether a person can be reached through it now;
	// detail says what was found, or why not.
	Reachable() (ok bool, detail string)
	// Show shows card c until ctx ends (the card was decided or timed
	// out); answers come back through Engine.Answer. Show may block.
	Show(ctx context.Context, c CardView)
}

// ApproverState is an approver as "postern status" reports it.
type ApproverState struct {
	Name      string `json:"name"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail,omitempty"`
}

// consoleGrace is how long a console counts as attached after its last
// wait for cards returned: the time it takes to ask again.
const consoleGrace = 3 * time.Second

// ReadTime is how long a card is up in a dialog or a notification before
// an approval given there is taken: a dialog takes the keyboard when it
// appears, and a notification may pop up under the pointer, so an Enter
// typed for another window, or a click meant for what was there, must
// not approve a card nobody read. (The consoles arm a card alike.)
const ReadTime = 500 * time.Millisecond

// console is an attached "postern approve".
type console struct {
	proc  procid.Process
	peer  *procid.Peer // pinned by the newest wait in progress; nil with none
	waits int          // waits for cards in progress
	until time.Time    // with none: counted until then
}

// AttachConsole counts approver as a console that shows every card, until
// detach is called and consoleGrace has passed. The gateway attaches the
// caller of each wait for cards made by a console; one process is one
// console, however often it waits.
func (e *Engine) AttachConsole(approver *procid.Peer) (detach func()) {
	e.mu.Lock()
	var c *console
	for o := range e.consoles {
		if o.proc.SameProcess(&approver.Process) {
			c = o
			break
		}
	}
	if c == nil {
		c = &console{proc: approver.Process}
		e.consoles[c] = struct{}{}
	}
	c.waits++
	c.peer = approver
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		if c.waits--; c.waits == 0 {
			c.until = e.now().Add(consoleGrace)
			c.peer = nil
		}
		e.mu.Unlock()
	}
}

// consolesLocked returns the attached consoles, and forgets those whose
// grace has passed. e.mu held.
func (e *Engine) consolesLocked(now time.Time) []console {
	var out []console
	for c := range e.consoles {
		if c.waits == 0 && now.After(c.until) {
			delete(e.consoles, c)
			continue
		}
		out = append(out, *c)
	}
	return out
}

// isOutside reports whether console c is none of about, descends from
// none of them and shares no terminal session with them. Its ancestry is
// walked once for all of them, from its own stat read through the pin of
// its wait in progress; without one (between two waits), or when that
// pin no longer reads, it is walked from its pid and start time for each.
func (e *Engine) isOutside(c *console, about ...*procid.Process) bool {
	for _, a := range about {
		if a.Session > 0 && c.proc.Session == a.Session {
			return false
		}
	}
	if c.peer != nil {
		in := false
		err := c.peer.Lineage(nil, func(pid int, start uint64) bool {
			for _, a := range about {
				if pid == a.PID && start == a.StartTicks {
					in = true
				}
			}
			return !in
		})
		if in || err == nil {
			return !in
		}
	}
	for _, a := range about {
		if in, err := e.procs.DescendsFrom(c.proc.PID, c.proc.StartTicks, a); in || err != nil {
			return false
		}
	}
	return true
}

// reachable returns how many consoles can show a card about the given
// processes and, when none can, the other approvers that can show it
// now. With neither the card is not shown: its request is refused at
// once (no_approver). When a console can, the other approvers are asked
// whether they can only after the card is up (showElsewhere): asking a
// notification service takes round trips on its bus, which must not hold
// the card back from the consoles. The consoles' ancestries are walked
// without e.mu held.
func (e *Engine) reachable(about ...*procid.Process) (shows []Approver, consoles int) {
	e.mu.Lock()
	attached := e.consolesLocked(e.now())
	e.mu.Unlock()
	for i := range attached {
		if e.isOutside(&attached[i], about...) {
			consoles++
		}
	}
	if consoles == 0 {
		shows = e.reachableApprovers()
	}
	return shows, consoles
}

// reachableApprovers returns the approvers besides the consoles that can
// show a card now.
func (e *Engine) reachableApprovers() []Approver {
	var shows []Approver
	for _, a := range e.approvers {
		if ok, _ := a.Reachable(); ok {
			shows = append(shows, a)
		}
	}
	return shows
}

// showElsewhere shows card v, until ctx ends, on the approvers besides
// the consoles: shows, found reachable before the card was up, or when a
// console made it showable (shows is then nil), those reachable now.
func (e *Engine) showElsewhere(ctx context.Context, v CardView, shows []Approver, console bool) {
	if console {
		shows = e.reachableApprovers()
	}
	for _, a := range shows {
		go a.Show(ctx, v)
	}
}

// Approvers reports each way a card can reach a person now: the
// attached consoles, then the other approvers.
func (e *Engine) Approvers() []ApproverState {
	e.mu.Lock()
	n := len(e.consolesLocked(e.now()))
	e.mu.Unlock()
	out := []ApproverState{{Name: "console", Reachable: n > 0, Detail: consoleDetail(n)}}
	for _, a := range e.approvers {
		ok, detail := a.Reachable()
		out = append(out, ApproverState{Name: a.Name(), Reachable: ok, Detail: detail})
	}
	return out
}

func consoleDetail(n int) string {
	switch n {
	case 0:
		return `none attached ("postern approve" in another terminal)`
	case 1:
		return "1 attached"
	}
	return itoa(n) + " attached"
}

// LastNoApprover returns when a request was last refused because no
// approver could be reached (zero if never).
func (e *Engine) LastNoApprover() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastNoApprover
}

// askpassApprover shows cards in an SSH_ASKPASS dialog (see askpassAnswer).
type askpassApprover struct{ e *Engine }

// Availability is what an askpass Confirmer may report: whether its
// program can be used here.
type Availability interface {
	Available() error
}

func (a askpassApprover) Name() string { return "askpass" }

func (a askpassApprover) Reachable() (bool, string) {
	av, ok := a.e.askpass.(Availability)
	if !ok {
		return true, ""
	}
	if err := av.Available(); err != nil {
		return false, err.Error()
	}
	return true, "SSH_ASKPASS dialog"
}

func (a askpassApprover) Show(ctx context.Context, c CardView) { a.e.askpassAnswer(ctx, c) }
