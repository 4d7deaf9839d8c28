package approvals

import (
	"errors"
	"strings"

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
// place in the log at once and writes it on another goroutine, Enter
// writes it here unless a write is under way (it then waits for the
// next), and wait returns what Append would have.
type StartRecorder interface {
	Recorder
	Start(audit.Event) (wait func() error)
	Enter(audit.Event) (wait func() error)
}

// record stamps ev with the boot id, the epoch and the time, and appends
// it to the audit log when there is one.
func (e *Engine) record(ev audit.Event) error {
	e.stamp(&ev)
	return e.appendStamped(ev)
}

// recordAt is record for an event of vault epoch epoch, 0 too: it does
// not ask the vault, whose lock is not taken under e.mu (the vault calls
// EpochChanged with its lock held). A VaultEpoch of 0 in an event is
// the epoch left to record to read, so it cannot give epoch 0.
func (e *Engine) recordAt(ev audit.Event, epoch uint64) error {
	ev.VaultEpoch = epoch
	e.stampTime(&ev)
	return e.appendStamped(ev)
}

// appendStamped appends an event record stamped already.
func (e *Engine) appendStamped(ev audit.Event) error {
	log := e.recorder()
	if log == nil {
		return nil
	}
	return e.recordErr(&ev, log.Append(ev))
}

// startStamped is appendStamped begun (StartRecorder.Start, or Enter
// when here): the record takes its place now and wait returns what
// appendStamped would have. A Recorder that cannot start records appends
// at once.
func (e *Engine) startStamped(ev audit.Event, here bool) (wait func() error) {
	log, ok := e.recorder().(StartRecorder)
	if !ok {
		err := e.appendStamped(ev)
		return func() error { return err }
	}
	start := log.Start
	if here {
		start = log.Enter
	}
	w := start(ev)
	return func() error { return e.recordErr(&ev, w()) }
}

// An allowRecord is the record of an allow that Decide returned before
// writing it (Request.Overlap): stamped at the decision, written when the
// caller asks (Decision.Begin, Decision.Recorded), once.
type allowRecord struct {
	e    *Engine
	r    *Request
	d    Decision // the allow, for postern why
	ev   audit.Event
	wait func() error // set by begin
	done bool
	err  error
}

// begin starts making the record durable: on another goroutine, or here
// unless a write is under way (here).
func (a *allowRecord) begin(here bool) {
	if a.wait == nil && !a.done {
		a.wait = a.e.startStamped(a.ev, here)
	}
}

// recorded makes the record durable, here unless begin started it, and
// returns why it is not recorded, if it is not.
func (a *allowRecord) recorded() error {
	if !a.done {
		var err error
		if a.wait != nil {
			err = a.wait()
		} else {
			err = a.e.appendStamped(a.ev)
		}
		a.done, a.err = true, a.e.recordedAllow(a.r, a.d, err)
	}
	return a.err
}

func (e *Engine) stamp(ev *audit.Event) {
	e.stampTime(ev)
	if ev.VaultEpoch == 0 {
		_, ev.VaultEpoch = e.vault()
	}
}

// stampTime stamps ev with the time and the boot id.
func (e *Engine) stampTime(ev *audit.Event) {
	ev.Time = e.now().UTC()
	ev.BootID = e.bootID
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

// inventoryOf returns what the host inventory calls r's destination, as
// the decision found it; looked up here only for a request refused
// before any decision. r.Dest is not nil.
func (e *Engine) inventoryOf(r *Request) *hostNames {
	if r.inventory == nil {
		names, classes := e.Hosts().Lookup(r.Dest.HostKey)
		r.inventory = &hostNames{names, classes}
	}
	return r.inventory
}

// requestEvent fills the facts of a request into an event, with the
// names and classes the host inventory gives its destination.
func (e *Engine) requestEvent(typ audit.EventType, r *Request, d Decision) audit.Event {
	ev := audit.Event{Type: typ, Key: r.Key.Fingerprint, Reason: d.Reason, Grant: d.Grant, Mode: d.Mode}
	var classes []string
	if r.Dest != nil {
		ev.Dest = r.Dest.Fingerprint()
		ev.Forwarding = r.Dest.Forwarding
		// What the host inventory calls the host: a production call
		// reads as one after the fact too, whatever the inventory
		// says by then.
		inv := e.inventoryOf(r)
		ev.DestNames, classes = inv.names, inv.classes
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
	if len(classes) > 0 {
		detail["dest_classes"] = strings.Join(classes, ",")
	}
	if r.Namespace != "" {
		detail["namespace"] = r.Namespace
	}
	if r.MessageHash != "" {
		detail["message_hash"] = r.MessageHash
	}
	if r.Key.Upstream {
		detail["key_holder"] = "upstream"
	}
	if r.Relay != RelayNone {
		detail["relay"] = string(r.Relay)
	}
	if r.ProbeOf != "" {
		detail["probe_of"] = r.ProbeOf
	}
	if r.Command != nil {
		detail["command"] = safetext.Bytes(r.Command, 0)
	}
	ev.Detail = detail
	return ev
}
