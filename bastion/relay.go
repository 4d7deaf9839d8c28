package bastion

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
)

// exit holds the remote command's end as the host reported it.
type exit struct {
	status *uint32
	signal *exitSignal
	raw    []byte // the request payload, forwarded verbatim
	kind   string
}

type exitSignal struct {
	Signal     string
	CoreDumped bool
	Msg        string
	Lang       string
}

// relay copies data both ways until the remote command ends, then
// journals the outcome and only then tells the client.
func (ss *session) relay(e *journal.Entry, up *upstream, uch gossh.Channel, ureqs <-chan *gossh.Request, later *laterRequests) {
	s := ss.s
	tail := newTail(4096)
	out := newPump(ss.dch, tail)
	errOut := newPump(ss.dch.Stderr(), tail)
	// What postern says on stderr, and the status, come after the host's
	// output.
	ss.drain = func() { out.drained(); errOut.drained() }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { out.read(uch); wg.Done() }()
	go func() { errOut.read(uch.Stderr()); wg.Done() }()
	// The command may end while the client still holds stdin open (an
	// interactive client closes it when it learns the status): the count
	// is read while the copy goes on.
	in := &countingWriter{w: uch}
	go func() {
		// stdin EOF is a half-close: the command may still write.
		io.Copy(in, ss.dch)
		uch.CloseWrite()
	}()
	clientGone := later.done
	hostDone := make(chan struct{})
	if e.PTY {
		go hangUpWhenGone(uch, clientGone, hostDone)
	}
	var ex exit
	for req := range ureqs {
		switch req.Type {
		// The last report counts, in the journal as for the client, to
		// which it alone is passed on.
		case "exit-status":
			var m struct{ S uint32 }
			if gossh.Unmarshal(req.Payload, &m) == nil {
				ex = exit{status: &m.S, raw: req.Payload, kind: req.Type}
			}
			reply(req, true)
		case "exit-signal":
			var m exitSignal
			if gossh.Unmarshal(req.Payload, &m) == nil {
				ex = exit{signal: &m, raw: req.Payload, kind: req.Type}
			}
			reply(req, true)
		default:
			// Passed on without waiting for the client's answer, which a
			// client may never give: the host gets the answer OpenSSH's
			// ssh gives a request it does not act on (sshd's
			// keepalive@openssh.com wants an answer, any answer).
			ss.dch.SendRequest(req.Type, false, req.Payload)
			reply(req, false)
		}
	}
	close(hostDone)
	// The channel closed upstream: read what the host sent, then decide
	// what is known, and record it before the client (which may read
	// slowly, or not at all) has taken the output.
	out.hostClosed()
	errOut.hostClosed()
	wg.Wait()
	// The client closes its channel only after the status this relay has
	// not sent yet: if it is closed already, the client went away.
	gone := out.failed() || errOut.failed()
	select {
	case <-clientGone:
		gone = true
	default:
	}
	end := journal.End{
		BytesIn: in.Count(), BytesOut: out.n, BytesErr: errOut.n,
		OutputTail: tail.bytes(), ClientGone: gone,
	}
	switch {
	case ex.status != nil:
		end.Outcome, end.ExitStatus = journal.OutcomeExited, int(*ex.status)
	case ex.signal != nil:
		end.Outcome, end.Signal, end.CoreDumped, end.ErrorMsg = journal.OutcomeSignaled, ex.signal.Signal, ex.signal.CoreDumped, ex.signal.Msg
	case s.stopping.Load() && !up.alive(time.Second):
		// Stop cut the connection: the gateway is stopping.
		ss.unknownTold(e, journal.ReasonBastionStopped, "the gateway stopped while the command ran, and cut its connection after the grace period",
			"the gateway stopped while the command was running, and cut it off after its grace period")
		return
	case !up.alive(3 * time.Second):
		detail := "the connection to the host ended before the command's exit status arrived"
		if err := up.cause(); err != nil {
			detail += ": " + err.Error()
		}
		ss.unknown(e, journal.ReasonUpstreamLost, detail)
		return
	default:
		// The host's word on how the command ended is its status or its
		// signal: a channel closed without either (a relay on the host
		// whose own connection was lost, or a bastion such as this one
		// telling of an outcome it does not know) tells nothing.
		ss.unknownTold(e, journal.ReasonNoStatus, fmt.Sprintf("the host closed the command's channel without an exit status or signal, on a connection that still answers, after %d bytes of output and %d of error output", out.n, errOut.n),
			ss.info.target.Host+" closed the command's channel without an exit status")
		return
	}
	_, err := s.changes.End(e.ID, end)
	ss.journaled()
	if err != nil {
		s.cfg.Log.Error("bastion: cannot journal the end of a command; its entry reads RUNNING, and unknown once the gateway restarts", "entry", e.ID, "outcome", end.Outcome, "err", err)
		ss.tell(fmt.Sprintf("the journal could not record how the command ended (%v): entry %s reads RUNNING, and unknown once the gateway restarts; the audit log records the end", err, e.ID))
	}
	s.cfg.Log.Info("bastion: command ended", "entry", e.ID, "outcome", end.Outcome, "status", end.ExitStatus, "signal", end.Signal, "client_gone", gone)
	ss.record(audit.EventCommandEnded, e, map[string]string{"outcome": end.Outcome, "status": strconv.Itoa(end.ExitStatus), "signal": end.Signal, "client_gone": strconv.FormatBool(gone)})
	ss.drain()
	if ex.kind != "" {
		ss.dch.SendRequest(ex.kind, false, ex.raw)
	}
	ss.dch.CloseWrite()
	ss.dch.Close()
}

// hangUpWhenGone hangs up the terminal of a session whose client goes
// before its command ends, as sshd does for a connection that drops: it
// closes the channel, on which sshd releases the terminal (the kernel
// sends SIGHUP to the command), and still sends how the command ended.
// Closing a terminal's input tells its command nothing: it would wait on
// the host, holding what it holds (a prompt, a lock), for as long as the
// bastion runs. A signal request would not do: sshd refuses it for a
// root login.
func hangUpWhenGone(uch gossh.Channel, clientGone, hostDone <-chan struct{}) {
	select {
	case <-clientGone:
		uch.Close()
	case <-hostDone:
	}
}

// unknown records that e's outcome cannot be observed, and tells the
// client that the connection to the host was lost.
func (ss *session) unknown(e *journal.Entry, reason, detail string) {
	ss.unknownTold(e, reason, detail, "the connection to "+ss.info.target.Host+" was lost while the command was running")
}

// unknownTold records that e's outcome cannot be observed, and tells the
// client what happened (what).
func (ss *session) unknownTold(e *journal.Entry, reason, detail, what string) {
	s := ss.s
	if ss.undispatched {
		// The host accepted the request: the last phase says so.
		ss.dispatched(e)
	}
	_, err := s.changes.MarkUnknown(e.ID, journal.Unknown{Reason: reason, Detail: detail})
	ss.journaled()
	if err != nil {
		s.cfg.Log.Error("bastion: cannot journal an unknown outcome; its entry reads RUNNING, and unknown once the gateway restarts", "entry", e.ID, "err", err)
		what += fmt.Sprintf("; the journal could not record that (%v)", err)
	}
	s.cfg.Log.Warn("bastion: outcome unknown", "entry", e.ID, "reason", reason)
	ss.record(audit.EventCommandUnknown, e, map[string]string{"reason": reason})
	ss.tellUnknown(e, what)
}
