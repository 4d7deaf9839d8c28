package gateway

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// The audit log as the gateway keeps it: writable again by itself. A log
// whose write, sync or key update failed (a full disk, an I/O error)
// refuses every later event, and every action an event announces is
// refused with it (fail closed). The gateway says so in status, and tries
// again, after a pause that doubles from a second to half a minute: it
// closes the failed log and opens it again, which verifies what is on
// disk from the last checkpoint, keeps what was written and continues it,
// exactly as after a crash. Once that works it records how long the log
// was failing and how many events it refused (audit_resumed), and actions
// are allowed again. A log that cannot be opened again (damaged, replaced,
// cut back: what Open refuses), or that ends before the latest anchor (an
// older copy put in its place meanwhile), stays refused, and status says
// why.

// auditLog is the gateway's audit log.
type auditLog struct {
	g    *Gateway
	cfg  audit.Config
	gate *anchorGate // cfg.OnCheckpoint's

	mu sync.RWMutex
	l  *audit.Log // nil while it is being opened again

	smu     sync.Mutex
	failure error     // why the log refuses, nil while it is writable
	since   time.Time // when it started to
	refused uint64    // events refused since
	stop    chan struct{}
	retry   sync.WaitGroup
}

// Retry pauses: the first, and the longest.
var (
	auditRetryFirst = time.Second
	auditRetryMost  = 30 * time.Second
)

func newAuditLog(g *Gateway, cfg audit.Config, l *audit.Log, gate *anchorGate) *auditLog {
	return &auditLog{g: g, cfg: cfg, gate: gate, l: l, stop: make(chan struct{})}
}

func (a *auditLog) current() *audit.Log {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.l
}

// Append records e, or refuses it (the action it announces must not
// happen) while the log cannot be written. A recorded event goes to the
// syslog export too.
func (a *auditLog) Append(e audit.Event) error {
	l := a.current()
	if l == nil {
		return a.refuse(nil)
	}
	return a.recorded(l, e, l.Append(e))
}

// Start begins recording e (audit.Log.Start) and returns a wait that
// says, once the record is durable, whether it was recorded, as Append.
func (a *auditLog) Start(e audit.Event) (wait func() error) { return a.begin(e, (*audit.Log).Start) }

// Enter is Start, the record written here when no write is under way
// (audit.Log.Enter).
func (a *auditLog) Enter(e audit.Event) (wait func() error) { return a.begin(e, (*audit.Log).Enter) }

func (a *auditLog) begin(e audit.Event, start func(*audit.Log, audit.Event) *audit.Pending) (wait func() error) {
	l := a.current()
	if l == nil {
		err := a.refuse(nil)
		return func() error { return err }
	}
	p := start(l, e)
	return func() error { return a.recorded(l, e, p.Wait()) }
}

// recorded finishes an append of e to l that returned err.
func (a *auditLog) recorded(l *audit.Log, e audit.Event, err error) error {
	if err != nil {
		return a.refuse(l, err)
	}
	if a.g.exporting() { // the message is made only for a daemon
		a.g.exportSend(eventMessage(e))
	}
	return nil
}

// Checkpoint seals what was recorded.
func (a *auditLog) Checkpoint() error {
	l := a.current()
	if l == nil {
		return a.refuse(nil)
	}
	if err := l.Checkpoint(); err != nil {
		return a.refuse(l, err)
	}
	return nil
}

// refuse counts a refused event and returns why; when l failed, the
// failure is recorded and the log is retried, unless l was opened again
// meanwhile (an append that took it before it failed).
func (a *auditLog) refuse(l *audit.Log, errs ...error) error {
	if l != nil {
		if ferr := l.Err(); ferr != nil {
			if l == a.current() {
				a.failed(ferr)
			}
		} else if len(errs) > 0 {
			return errs[0] // this event, not the log (too large, say)
		}
	}
	a.smu.Lock()
	defer a.smu.Unlock()
	a.refused++
	if len(errs) > 0 {
		return errs[0]
	}
	return fmt.Errorf("%w: the audit log cannot be written (%v); the gateway retries it", audit.ErrNotRecorded, a.failure)
}

// failed records that the log failed with err, and starts retrying it.
func (a *auditLog) failed(err error) {
	a.smu.Lock()
	defer a.smu.Unlock()
	if a.failure != nil {
		return
	}
	select {
	case <-a.stop:
		return
	default:
	}
	a.failure, a.since, a.refused = err, time.Now(), 0
	a.g.log.Error("the audit log cannot be written; actions are refused until it can, and the gateway retries it", "err", err)
	a.retry.Add(1)
	go a.retryLoop()
}

// retryLoop opens the log again until that works or the gateway stops.
func (a *auditLog) retryLoop() {
	defer a.retry.Done()
	pause := auditRetryFirst
	for {
		select {
		case <-a.stop:
			return
		case <-time.After(pause):
		}
		if a.reopen() {
			return
		}
		pause = min(2*pause, auditRetryMost)
	}
}

// reopen closes the failed log and opens it again; it reports whether
// the log is writable again.
func (a *auditLog) reopen() bool {
	a.mu.Lock()
	old := a.l
	a.l = nil
	a.mu.Unlock()
	if old != nil {
		old.Close() // releases its files; its failure is known
	}
	// What is on disk now may be an older copy put back meanwhile (a full
	// disk is easy to bring about): it must hold the latest anchor.
	latest, latestErr := api.ParseAnchor(a.g.anchors.lastAnchor())
	a.gate.hold()
	cfg := a.cfg
	if latestErr == nil {
		cfg.Anchors = []audit.Anchor{latest}
	}
	const where = "the anchor of its last checkpoint before it failed"
	l, err := audit.Open(cfg)
	if latestErr == nil {
		err = behindAnchor(err, a.cfg.Path, latest, where)
	}
	if err == nil && latestErr == nil {
		if err = olderThan(l.Found(), a.cfg.Path, latest, where); err != nil {
			l.Close()
		}
	}
	if err != nil {
		a.smu.Lock()
		a.failure = err
		a.smu.Unlock()
		a.g.log.Warn("the audit log still cannot be opened; retrying", "err", err)
		return false
	}
	a.gate.release()
	a.smu.Lock()
	cause, since, refused := a.failure, a.since, a.refused
	a.failure, a.refused = nil, 0
	a.smu.Unlock()
	a.mu.Lock()
	a.l = l
	a.mu.Unlock()
	a.g.log.Info("the audit log is writable again", "failed_at", since, "refused", refused)
	a.g.engine.Record(audit.Event{Type: audit.EventAuditResumed, Detail: map[string]string{
		"failed_at": since.UTC().Format(time.RFC3339Nano), "error": errString(cause), "refused": strconv.FormatUint(refused, 10),
	}})
	if err := a.Checkpoint(); err != nil {
		a.g.log.Error("audit checkpoint failed", "err", err)
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Close stops retrying and closes the log with a final checkpoint.
func (a *auditLog) Close() error {
	a.smu.Lock()
	close(a.stop)
	a.smu.Unlock()
	a.retry.Wait()
	if l := a.current(); l != nil {
		return l.Close()
	}
	return errors.New("the audit log was not open: it could not be written since " + a.since.UTC().Format(time.RFC3339))
}

// status reports the log.
func (a *auditLog) status() api.AuditStatus {
	st := api.AuditStatus{Enabled: true, Path: a.cfg.Path}
	if l := a.current(); l != nil {
		st.LogID, st.Records = l.LogID(), l.Head().Seq+1
	}
	a.smu.Lock()
	defer a.smu.Unlock()
	if a.failure != nil {
		st.Failing = a.failure.Error()
		st.FailingSince = a.since.UTC().Format(time.RFC3339)
		st.Refused = a.refused
	}
	return st
}

// Path returns the log's file.
func (a *auditLog) Path() string { return a.cfg.Path }
