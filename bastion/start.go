package bastion

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/marker"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safetext"
)

// start obtains the upstream connection and the decision, journals the
// command (durably, before it is sent), and sends it.
func (ss *session) start(req *gossh.Request, pty []byte, envs [][]byte, later *laterRequests) {
	s, info := ss.s, ss.info
	kind := req.Type
	var cmd []byte
	if kind == journal.KindShell && !wellFormed(kind, req.Payload) {
		reply(req, false)
		ss.dch.Close()
		return
	}
	if kind != journal.KindShell {
		var m struct{ S string }
		if err := gossh.Unmarshal(req.Payload, &m); err != nil {
			reply(req, false)
			ss.dch.Close()
			return
		}
		cmd = []byte(m.S)
	}
	e := &journal.Entry{
		BootID:        s.cfg.BootID,
		Conn:          info.id,
		Requester:     info.chain,
		RequesterPID:  info.requester.PID,
		Target:        journal.Target{User: info.target.User, Host: info.target.Host, Port: info.target.Port},
		Kind:          kind,
		Command:       cmd,
		CommandSHA256: journal.CommandHash(cmd),
		PTY:           pty != nil,
		Marker:        kind == journal.KindExec && s.markersFor(info.target.Host),
	}
	// Counted as being decided from its decision (decide) until it is
	// sent (s.running.add) or refused (s.running.done, before the client
	// is told: it may send the same command again at once).
	defer s.running.done(e)
	defer ss.journaled()
	log := s.cfg.Log.With("target", info.target.String())
	// OpenSSH's sshd reads a command as a C string, and ends the whole
	// connection on one that holds a NUL: every command running on it
	// would be cut.
	if bytes.IndexByte(e.Command, 0) >= 0 {
		ss.refuse(req, "refused: the "+kind+" request holds a NUL byte, on which the host's sshd would end the connection and every command on it. The command was not sent", ExitDenied)
		return
	}
	// An approval covers what its card showed, and a card shows a command
	// whole or not at all.
	if !safetext.Whole(string(e.Command), safetext.Command) {
		ss.refuse(req, fmt.Sprintf("refused: the command is longer than a card shows (%d characters of %d once escaped); run a script that is on the host instead. The command was not sent", utf8.RuneCountInString(safetext.Escape(string(e.Command))), safetext.Command), ExitDenied)
		return
	}
	if why := s.refusal(); why != "" {
		ss.refuse(req, why+"; the command was not sent", ExitUnreachable)
		return
	}
	up, d, err := ss.upstreamFor(e)
	if uerr := undecided(d); uerr != nil {
		err = uerr
	}
	if up != nil {
		e.Target.HostKey = hostKeyFingerprint(up.hostKey)
	}
	if d != nil {
		e.Run = d.Run
		e.Approval = string(d.Reason)
		if d.Grant != "" {
			e.Approval += " " + d.Grant
		} else if d.Card != "" {
			e.Approval += " " + d.Card
		}
	}
	switch {
	case d != nil && !d.Allow && err == nil:
		s.running.done(e)
		log.Info("bastion: command denied", "reason", d.Reason)
		if e.RetryOf != "" {
			// Not journaled: the earlier entry keeps its unknown outcome
			// and its guard; the audit log has the denial.
			ss.refuse(req, fmt.Sprintf("refused: an identical command (journal entry %s) has an unknown outcome and the retry was not approved (%s); %s", e.RetryOf, d.Reason, resolveAdvice(e.RetryOf)), ExitDenied)
			return
		}
		if ss.journalStart(req, e) {
			note := ss.notSent(e, journal.End{Outcome: journal.OutcomeDenied, ErrorMsg: string(d.Reason)})
			ss.refuse(req, fmt.Sprintf("denied (%s); the command was not sent (journal entry %s)%s%s", d.Reason, e.ID, note, ss.goneAdvice()), ExitDenied)
		}
		return
	case err != nil:
		s.running.done(e)
		if procid.Short(err) && !errors.Is(err, procid.ErrNoResources) {
			// Reading known_hosts, dialling the host: said as every
			// other failure for want of descriptors is.
			err = fmt.Errorf("%w: %w", procid.ErrNoResources, err)
		}
		log.Warn("bastion: command not started", "err", err)
		note := ""
		if e.RetryOf == "" && ss.journalStart(req, e) {
			note = ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		}
		msg := err.Error() + " (the command was not sent)"
		if errors.Is(err, ErrNoKeys) {
			msg += `; unlock the vault with "postern unlock", or add a key with ssh-add`
		}
		ss.refuse(req, msg+note, ExitUnreachable)
		return
	}
	// Only for someone waiting: the answer may have come after the client
	// left.
	if err := ss.stillWaiting(); err != nil {
		s.running.done(e)
		log.Info("bastion: command not sent", "err", err)
		note := ""
		if e.RetryOf == "" && ss.journalStart(req, e) {
			note = ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		}
		ss.refuse(req, err.Error()+note, ExitUnreachable)
		return
	}
	// Held, or stopping, while its card waited.
	if why := s.refusal(); why != "" {
		ss.refuse(req, why+"; the command was not sent", ExitUnreachable)
		return
	}
	up.acquire()
	defer up.release()
	// Intent before effect: the entry, with its approval and the verified
	// host key, is durable before anything is sent.
	if !ss.journalStart(req, e) {
		return
	}
	s.running.add(e)
	defer s.running.ended(s.cfg.Journal, e)
	log = log.With("entry", e.ID)
	if err := ss.record(audit.EventCommandStarted, e, nil); err != nil {
		note := ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		ss.refuse(req, "the audit log cannot record the command ("+err.Error()+"); it was not sent"+note, ExitUnreachable)
		return
	}
	ss.audited = true
	uch, ureqs, err := up.client.OpenChannel("session", nil)
	if err != nil {
		note := ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		ss.refuse(req, "opening a session on "+info.target.Host+": "+err.Error()+note, ExitUnreachable)
		return
	}
	if pty != nil {
		if ok, _ := uch.SendRequest("pty-req", true, pty); !ok {
			ss.tell("the remote host refused a terminal")
		}
	}
	for _, env := range envs {
		uch.SendRequest("env", false, env)
	}
	payload := req.Payload
	if e.Marker {
		wrapped, err := marker.Wrap(e.ID, cmd)
		if err != nil {
			note := ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
			ss.refuse(req, "cannot wrap the command for remote markers: "+err.Error()+note, ExitUnreachable)
			uch.Close()
			return
		}
		payload = gossh.Marshal(struct{ S string }{wrapped})
	}
	// Only for someone waiting, again: recording the command took the
	// journal's and the audit log's writes, and the session's requests.
	if err := ss.stillWaiting(); err != nil {
		log.Info("bastion: command not sent", "err", err)
		note := ss.notSent(e, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		ss.refuse(req, err.Error()+note, ExitUnreachable)
		uch.Close()
		return
	}
	ok, err := uch.SendRequest(kind, true, payload)
	if err != nil {
		// The request may or may not have reached the host.
		ss.unknown(e, journal.ReasonDispatchUnconfirmed, err.Error())
		uch.Close()
		return
	}
	if !ok {
		if note := ss.notSent(e, journal.End{Outcome: journal.OutcomeRejected}); note != "" {
			ss.tell("the host refused the " + kind + " request" + note)
		}
		reply(req, false)
		uch.Close()
		ss.dch.Close()
		return
	}
	ss.dispatched(e)
	later.sendTo(uch)
	reply(req, true)
	log.Info("bastion: command started", "kind", kind, "marker", e.Marker)
	ss.relay(e, up, uch, ureqs, later)
}

// resolveAdvice tells the person at the ssh client what to do about an
// entry whose outcome is unknown: the bastion's refusals are its edge,
// where advice naming a command belongs.
func resolveAdvice(id string) string {
	return fmt.Sprintf(`check the host, then run "postern journal resolve %s"`, id)
}

// goneAdvice says, of a command refused because the ssh process behind
// the connection had exited, why that happens to a command ssh sends: it
// sent it from a copy of itself in the background (ssh -f forks once
// logged in to the bastion, before it sends the command; ControlPersist
// hands the connection to a copy), and a command goes only for the ssh
// that connected. "" for any other refusal.
func (ss *session) goneAdvice() string {
	if !ss.requesterGone {
		return ""
	}
	return fmt.Sprintf(": the ssh process that connected (pid %d) has exited, and ssh -f, or ControlPersist, sends the command from a copy of ssh in the background, which the bastion does not take for it; run ssh without -f and ControlPersist", ss.info.requester.PID)
}

// journaled ends the count of a command journalStart began, once its
// end is written (or start returns): the journal holds nothing more of
// it, though its client may take its time over the rest of its output.
func (ss *session) journaled() {
	if ss.entered {
		ss.entered = false
		ss.s.gate.leave()
	}
}

// journalStart commits the entry; when it cannot, the command is refused
// (fail closed) and false is returned.
func (ss *session) journalStart(req *gossh.Request, e *journal.Entry) bool {
	if !ss.s.gate.enter() {
		ss.s.running.done(e)
		ss.refuse(req, "the command journal was replaced, and this connection was made with the one before; the command was not sent: connect again", ExitUnreachable)
		return false
	}
	ss.entered = true
	err := ss.s.cfg.Journal.Start(e)
	if err == nil {
		return true
	}
	// Not under way any more: an identical command asks as if it never was.
	ss.s.running.done(e)
	var ue *journal.UnresolvedError
	if errors.As(err, &ue) {
		ss.refuse(req, ue.Error()+"; "+resolveAdvice(ue.Entry.ID)+", or approve a retry", ExitDenied)
		return false
	}
	if errors.Is(err, journal.ErrTransition) {
		// The retry guard, not the disk: a retry whose approval an
		// identical retry used first, or whose earlier entry has since
		// completed.
		ss.s.cfg.Log.Info("bastion: retry refused by the journal", "err", err)
		ss.refuse(req, "refused: "+err.Error()+"; the command was not sent", ExitDenied)
		return false
	}
	ss.s.cfg.Log.Error("bastion: cannot journal a command; refusing it", "err", err)
	ss.refuse(req, "the command journal cannot be written ("+err.Error()+"); the command was not sent", ExitUnreachable)
	return false
}
