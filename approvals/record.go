package approvals

import (
	"errors"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safetext"
)

// A Recorder makes events durable: *audit.Log. An error means the event
// was not recorded, and the action it announces must not happen.
type Recorder interface {
	Append(audit.Event) error
}

// ErrNotRecorded refuses an action whose audit event could not be written.
var ErrNotRecorded = errors.New("the audit log could not record the action")

// A StartRecorder is a Recorder that can also begin a record and let the
// caller wait for it (the gateway's audit log): Start takes the record's
// place in the log at once, and wait returns what Append would have.
type StartRecorder interface {
	Recorder
	Start(audit.Event) (wait func() error)
}

// record stamps ev with the boot id, the epoch and the time, and appends
// it to the audit log when there is one.
func (e *Engine) record(ev audit.Event) error {
	log := e.recorder()
	if log == nil {
		return nil
	}
	e.stamp(&ev)
	return e.recordErr(&ev, log.Append(ev))
}

// recordStart is record begun: the record takes its place now and wait
// returns what record would have. A Recorder that cannot start records
// appends at once.
func (e *Engine) recordStart(ev audit.Event) (wait func() error) {
	log, ok := e.recorder().(StartRecorder)
	if !ok {
		err := e.record(ev)
		return func() error { return err }
	}
	e.stamp(&ev)
	w := log.Start(ev)
	return func() error { return e.recordErr(&ev, w()) }
}

func (e *Engine) stamp(ev *audit.Event) {
	ev.Time = e.now().UTC()
	ev.BootID = e.bootID
	if ev.VaultEpoch == 0 {
		_, ev.VaultEpoch = e.vault()
	}
}

func (e *Engine) recordErr(ev *audit.Event, err error) error {
	if err != nil {
		e.log.Error("audit log not written", "event", ev.Type, "err", err)
	}
	return err
}

// Record appends an event for another part of the gateway (the bastion's
// command events, policy reloads); see record.
func (e *Engine) Record(ev audit.Event) error { return e.record(ev) }

func auditProcess(t *procid.Table, p *procid.Process) *audit.Process {
	h := p.Exe.Hash()
	if len(h) > 16 {
		h = h[:16]
	}
	return &audit.Process{
		PID: p.PID, StartTicks: p.StartTicks, Start: p.Started(t).UTC(), Exe: p.Exe.Path,
		ExeSHA256: h, UID: int(p.UID), PPID: p.PPID,
	}
}

// requestEvent fills the facts of a request into an event.
func requestEvent(typ audit.EventType, r *Request, d Decision) audit.Event {
	ev := audit.Event{Type: typ, Key: r.Key.Fingerprint, Reason: d.Reason, Grant: d.Grant, Mode: d.Mode}
	if r.Dest != nil {
		ev.Dest = r.Dest.Fingerprint()
		ev.Forwarding = r.Dest.Forwarding
	}
	ev.Forwarding = ev.Forwarding || r.Forwarded
	if r.Channel.Run != "" {
		ev.Run = r.Channel.Run
	}
	detail := map[string]string{"channel": string(r.Channel.Kind), "purpose": string(r.Purpose)}
	if r.Requester != nil {
		detail["pid"] = itoa(r.Requester.PID)
		detail["exe"] = r.Requester.Exe.Path
	}
	if r.Namespace != "" {
		detail["namespace"] = r.Namespace
	}
	if r.Key.Upstream {
		detail["key_holder"] = "upstream"
	}
	if r.Command != nil {
		detail["command"] = safetext.Bytes(r.Command, 0)
	}
	ev.Detail = detail
	return ev
}
