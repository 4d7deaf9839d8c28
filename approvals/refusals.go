package approvals

import (
	"strconv"
	"sync"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/pace"
)

// Refusals are recorded at the pace a person could read them. A
// requester that floods the agent with requests it is refused (a key
// the agent does not hold, a policy that denies) would otherwise fill
// the disk with the audit log, and a log that cannot be written refuses
// every action, the person's too.
//
// Each requester (a run; else the requesting process) has a bucket of
// refusalBurst records, refilled by refusalRate a second. Past it, a
// refusal is counted instead of recorded: the requester's next recorded
// refusal carries the count in its detail ("suppressed"), and when none
// comes within refusalFlush, the latest counted refusal is recorded then
// with the count of the others; once the engine stops, every refusal is
// recorded at once. Every refusal is so accounted for: the
// refusals of a requester are its action_denied events plus the sum of
// their "suppressed" counts.
const (
	refusalBurst = 64
	refusalRate  = 8 // records a second
	// maxRefusers bounds the requesters followed; past it, the new ones
	// share one bucket.
	maxRefusers = 4096
)

// refusalFlush is how long a counted refusal waits for the requester's
// next recorded one.
var refusalFlush = time.Second

// afterFunc starts the timer of a flush (time.AfterFunc; a test holds
// the moment it fires).
var afterFunc = time.AfterFunc

// A refuser is what one requester's refusals were counted for.
type refuser struct {
	suppressed int         // refusals counted since the last recorded one
	last       audit.Event // the latest refusal counted
	flush      *time.Timer // records last once refusalFlush has passed
}

// refusals are the buckets, by requester.
type refusals struct {
	mu sync.Mutex
	by *pace.Set[refuser]
	// stopped: the engine stopped, and a refusal is recorded at once,
	// not counted for a flush that would come after the audit log closed.
	stopped bool
}

// refusalSet is a new set of refusal buckets.
func refusalSet() *pace.Set[refuser] {
	return &pace.Set[refuser]{Burst: refusalBurst, Rate: refusalRate, Max: maxRefusers,
		Idle: func(f *refuser) bool { return f.suppressed == 0 && f.flush == nil }}
}

// refuserOf names the requester of r: its run, else its process.
func refuserOf(r *Request) string {
	switch {
	case r.Channel.Run != "":
		return "run " + r.Channel.Run
	case r.Requester != nil:
		return "pid " + strconv.Itoa(r.Requester.PID) + " " + strconv.FormatUint(r.Requester.StartTicks, 10)
	}
	return ""
}

// recordRefusal records ev, the refusal of r, or counts it when r's
// requester is past its pace.
func (e *Engine) recordRefusal(r *Request, ev audit.Event) {
	key := refuserOf(r)
	now := e.now()
	rs := &e.refusals
	rs.mu.Lock()
	entry := rs.by.Get(key, now)
	f := &entry.Val
	if !rs.by.Take(entry, now) && !rs.stopped {
		f.suppressed++
		f.last = ev
		if f.flush == nil {
			f.flush = afterFunc(refusalFlush, func() { e.flushRefusals(f) })
		}
		rs.mu.Unlock()
		return
	}
	n := f.suppressed
	f.suppressed, f.last = 0, audit.Event{}
	if f.flush != nil {
		f.flush.Stop()
		f.flush = nil
	}
	rs.mu.Unlock()
	e.record(withSuppressed(ev, n))
}

// flushRefusals records the latest refusal f was counted for, with the
// count of the others, if no recorded one carried them.
func (e *Engine) flushRefusals(f *refuser) {
	rs := &e.refusals
	rs.mu.Lock()
	if f.suppressed == 0 {
		f.flush = nil
		rs.mu.Unlock()
		return
	}
	ev, n := f.last, f.suppressed
	f.suppressed, f.last, f.flush = 0, audit.Event{}, nil
	rs.mu.Unlock()
	e.record(withSuppressed(ev, n-1))
}

// flushAllRefusals records what every requester was counted for (the
// gateway is stopping); the refusals after it are recorded at once.
func (e *Engine) flushAllRefusals() {
	rs := &e.refusals
	rs.mu.Lock()
	rs.stopped = true
	var pending []*refuser
	now := e.now()
	for _, k := range rs.by.Keys() {
		if f := &rs.by.Get(k, now).Val; f.flush != nil && f.flush.Stop() {
			pending = append(pending, f)
		}
	}
	rs.mu.Unlock()
	for _, f := range pending {
		e.flushRefusals(f)
	}
}

// withSuppressed returns ev saying that n refusals before it were
// counted, not recorded.
func withSuppressed(ev audit.Event, n int) audit.Event {
	if n > 0 {
		d := make(map[string]string, len(ev.Detail)+1)
		for k, v := range ev.Detail {
			d[k] = v
		}
		d["suppressed"] = strconv.Itoa(n)
		ev.Detail = d
	}
	return ev
}
