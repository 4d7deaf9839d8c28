package bastion

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	gliderssh "github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/marker"
)

// ExitDenied is the exit status a client sees when postern refused a
// command (policy, approval, or the retry guard): the command was not
// sent. It is postern's own status, never a remote one.
const ExitDenied = 254

// session relays one session channel: the client's requests up, the
// remote command's output, status and signals down, and journals the
// command's start and end.
type session struct {
	s    *Server
	info *connInfo
	dch  gossh.Channel
}

func (s *Server) handleSession(_ *gliderssh.Server, _ *gossh.ServerConn, nc gossh.NewChannel, ctx gliderssh.Context) {
	info, _ := ctx.Value(connInfoKey{}).(*connInfo)
	if info == nil {
		nc.Reject(gossh.Prohibited, "no destination")
		return
	}
	dch, dreqs, err := nc.Accept()
	if err != nil {
		return
	}
	ss := &session{s: s, info: info, dch: dch}
	ss.serve(dreqs)
}

func reply(r *gossh.Request, ok bool) {
	if r.WantReply {
		r.Reply(ok, nil)
	}
}

// serve collects the requests that come before the command (a terminal,
// environment variables), then starts the command.
func (ss *session) serve(dreqs <-chan *gossh.Request) {
	var pty []byte
	var envs [][]byte
	for req := range dreqs {
		switch req.Type {
		case "pty-req":
			pty = req.Payload
			reply(req, true)
		case "env":
			envs = append(envs, req.Payload)
			reply(req, true)
		case "exec", "shell", "subsystem":
			ss.start(req, pty, envs, dreqs)
			return
		default:
			// X11 and agent forwarding through the bastion are refused.
			reply(req, false)
		}
	}
	ss.dch.Close()
}

// refuse tells the client why its command was not sent, and ends the
// session with postern's own status: ExitDenied for a refusal, 255 (what
// ssh reports when it cannot reach a host) when the host could not be
// reached or trusted. The journal says exactly which.
func (ss *session) refuse(req *gossh.Request, msg string, status int) {
	reply(req, true)
	io.WriteString(ss.dch.Stderr(), "postern: "+msg+"\r\n")
	ss.dch.SendRequest("exit-status", false, gossh.Marshal(struct{ S uint32 }{uint32(status)}))
	ss.dch.Close()
}

// ExitUnreachable is the status of a command the bastion could not start
// because the host could not be reached, trusted or authenticated to.
const ExitUnreachable = 255

// start obtains the upstream connection and the decision, journals the
// command (durably, before it is sent), and sends it.
func (ss *session) start(req *gossh.Request, pty []byte, envs [][]byte, dreqs <-chan *gossh.Request) {
	s, info := ss.s, ss.info
	kind := req.Type
	var cmd []byte
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
	// The retry guard: an identical command whose outcome is unknown is
	// sent again only if a person approves, on a card that shows it.
	retry := ""
	if prev, err := s.cfg.Journal.Unresolved(e.Target, kind, e.CommandSHA256); err == nil && prev != nil {
		e.RetryOf = prev.ID
		retry = fmt.Sprintf("journal entry %s (%s, started %s)", prev.ID, prev.Status(), prev.Started.Local().Format("2006-01-02 15:04:05"))
	}
	log := s.cfg.Log.With("target", info.target.String())
	up, d, err := ss.upstreamFor(e, retry)
	if up != nil {
		e.Target.HostKey = gossh.FingerprintSHA256(up.hostKey)
	}
	if d != nil {
		e.Run = d.Run
		e.Approval = d.Reason
		if d.Grant != "" {
			e.Approval += " " + d.Grant
		} else if d.Card != "" {
			e.Approval += " " + d.Card
		}
	}
	switch {
	case d != nil && !d.Allow:
		log.Info("bastion: command denied", "reason", d.Reason)
		if e.RetryOf != "" {
			// Not journaled: the earlier entry keeps its unknown outcome
			// and its guard; the audit log has the denial.
			ss.refuse(req, fmt.Sprintf("refused: an identical command (journal entry %s) has an unknown outcome and the retry was not approved (%s); check the host, then \"postern journal resolve %s\"", e.RetryOf, d.Reason, e.RetryOf), ExitDenied)
			return
		}
		if ss.journalStart(req, e) {
			s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeDenied, ErrorMsg: d.Reason})
			ss.refuse(req, fmt.Sprintf("denied (%s); the command was not sent (journal entry %s)", d.Reason, e.ID), ExitDenied)
		}
		return
	case err != nil:
		log.Warn("bastion: command not started", "err", err)
		if e.RetryOf == "" && ss.journalStart(req, e) {
			s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		}
		ss.refuse(req, err.Error()+" (the command was not sent)", ExitUnreachable)
		return
	}
	up.acquire()
	defer up.release()
	// Intent before effect: the entry, with its approval and the verified
	// host key, is durable before anything is sent.
	if !ss.journalStart(req, e) {
		return
	}
	log = log.With("entry", e.ID)
	if err := ss.record(EventCommandStarted, e, nil); err != nil {
		s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		ss.refuse(req, "the audit log cannot record the command ("+err.Error()+"); it was not sent", ExitUnreachable)
		return
	}
	uch, ureqs, err := up.client.OpenChannel("session", nil)
	if err != nil {
		s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
		ss.refuse(req, "opening a session on "+info.target.Host+": "+err.Error(), ExitUnreachable)
		return
	}
	if pty != nil {
		if ok, _ := uch.SendRequest("pty-req", true, pty); !ok {
			io.WriteString(ss.dch.Stderr(), "postern: the remote host refused a terminal\r\n")
		}
	}
	for _, env := range envs {
		uch.SendRequest("env", false, env)
	}
	payload := req.Payload
	if e.Marker {
		wrapped, err := marker.Wrap(e.ID, cmd)
		if err != nil {
			s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeFailedToStart, ErrorMsg: err.Error()})
			ss.refuse(req, "cannot wrap the command for remote markers: "+err.Error(), ExitUnreachable)
			uch.Close()
			return
		}
		payload = gossh.Marshal(struct{ S string }{wrapped})
	}
	ok, err := uch.SendRequest(kind, true, payload)
	if err != nil {
		// The request may or may not have reached the host.
		s.cfg.Journal.MarkUnknown(e.ID, journal.Unknown{Reason: journal.ReasonDispatchUnconfirmed, Detail: err.Error()})
		ss.record(EventCommandUnknown, e, map[string]string{"reason": journal.ReasonDispatchUnconfirmed})
		ss.tellUnknown(e)
		uch.Close()
		return
	}
	if !ok {
		s.cfg.Journal.End(e.ID, journal.End{Outcome: journal.OutcomeRejected})
		reply(req, false)
		uch.Close()
		ss.dch.Close()
		return
	}
	s.cfg.Journal.Dispatched(e.ID)
	reply(req, true)
	log.Info("bastion: command started", "kind", kind, "marker", e.Marker)
	ss.relay(e, up, uch, ureqs, dreqs)
}

// journalStart commits the entry; when it cannot, the command is refused
// (fail closed) and false is returned.
func (ss *session) journalStart(req *gossh.Request, e *journal.Entry) bool {
	err := ss.s.cfg.Journal.Start(e)
	if err == nil {
		return true
	}
	var ue *journal.UnresolvedError
	if errors.As(err, &ue) {
		ss.refuse(req, ue.Error(), ExitDenied)
		return false
	}
	ss.s.cfg.Log.Error("bastion: cannot journal a command; refusing it", "err", err)
	ss.refuse(req, "the command journal cannot be written ("+err.Error()+"); the command was not sent", ExitUnreachable)
	return false
}

// upstreamFor returns the connection to the real host, dialing it for the
// first command (its authentication asks the approval decision, with this
// command on the card), and asks the decision again for later commands on
// the same client connection.
func (ss *session) upstreamFor(e *journal.Entry, retry string) (*upstream, *approvals.Decision, error) {
	s, info := ss.s, ss.info
	info.mu.Lock()
	defer info.mu.Unlock()
	if up := info.up; up != nil {
		select {
		case <-up.dead:
			info.up = nil
		default:
			d := ss.decide(up.key, up.hostKey, e, retry, approvals.ActionCommand)
			return up, &d, nil
		}
	}
	keys, err := s.cfg.Keys.Keys()
	if err != nil {
		return nil, &approvals.Decision{Reason: approvals.ReasonVaultLocked}, nil
	}
	if len(keys) == 0 {
		return nil, nil, errors.New("the gateway holds no keys (postern unlock, or ssh-add)")
	}
	var hostKey gossh.PublicKey
	signers := make([]gossh.Signer, len(keys))
	gated := make([]*gatedSigner, len(keys))
	for i, k := range keys {
		gated[i] = &gatedSigner{key: k, keys: s.cfg.Keys, decide: func(k Key) approvals.Decision {
			return ss.decide(k, hostKey, e, retry, approvals.ActionSign)
		}}
		signers[i] = gated[i]
	}
	client, hk, err := dialUpstream(info.target, s.cfg.KnownHosts, func(k gossh.PublicKey) { hostKey = k }, signers, s.cfg.DialTimeout)
	for _, g := range gated {
		if g.decision != nil {
			if err != nil || !g.decision.Allow {
				return nil, g.decision, nil
			}
			up := &upstream{client: client, hostKey: hk, key: g.key, dead: make(chan struct{})}
			go func() {
				up.err = client.Wait()
				close(up.dead)
			}()
			go up.keepalive(s.cfg.Keepalive, 3)
			info.up = up
			return up, g.decision, nil
		}
	}
	if err == nil {
		client.Close()
		err = errors.New("authenticated without a key")
	}
	return nil, nil, fmt.Errorf("%s: %w", info.target.Host, err)
}

// decide asks the approval decision about a command, for the requester
// behind the client connection, verified again now.
func (ss *session) decide(k Key, hostKey gossh.PublicKey, e *journal.Entry, retry, action string) approvals.Decision {
	info := ss.info
	if err := info.requester.Verify(); err != nil {
		return approvals.Decision{Reason: approvals.ReasonIdentityMismatch}
	}
	shown := e.Command
	switch e.Kind {
	case "shell":
		shown = []byte("(interactive shell)")
	case "subsystem":
		shown = append([]byte("(subsystem) "), e.Command...)
	}
	req := &approvals.Request{
		Requester: info.requester,
		Channel:   approvals.Channel{Kind: "bastion"},
		Key:       k.Info,
		Purpose:   approvals.PurposeAuth,
		Dest:      &approvals.Destination{HostKey: hostKey, User: info.target.User},
		Command:   shown,
		RetryOf:   retry,
		Action:    action,
	}
	return ss.s.cfg.Decider.Decide(context.Background(), req)
}

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
func (ss *session) relay(e *journal.Entry, up *upstream, uch gossh.Channel, ureqs <-chan *gossh.Request, dreqs <-chan *gossh.Request) {
	s := ss.s
	tail := newTail(4096)
	out := &pump{dst: ss.dch, tail: tail}
	errOut := &pump{dst: ss.dch.Stderr(), tail: tail}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { out.copy(uch); wg.Done() }()
	go func() { errOut.copy(uch.Stderr()); wg.Done() }()
	var bytesIn int64
	stdinDone := make(chan struct{})
	go func() {
		// stdin EOF is a half-close: the command may still write.
		bytesIn, _ = io.Copy(uch, ss.dch)
		uch.CloseWrite()
		close(stdinDone)
	}()
	clientGone := make(chan struct{})
	go func() {
		for req := range dreqs {
			switch req.Type {
			case "window-change", "signal", "break", "xon-xoff":
				ok, _ := uch.SendRequest(req.Type, req.WantReply, req.Payload)
				reply(req, ok)
			default:
				reply(req, false)
			}
		}
		close(clientGone)
	}()
	var ex exit
	for req := range ureqs {
		switch req.Type {
		case "exit-status":
			var m struct{ S uint32 }
			if gossh.Unmarshal(req.Payload, &m) == nil {
				ex.status, ex.raw, ex.kind = &m.S, req.Payload, req.Type
			}
			reply(req, true)
		case "exit-signal":
			var m exitSignal
			if gossh.Unmarshal(req.Payload, &m) == nil {
				ex.signal, ex.raw, ex.kind = &m, req.Payload, req.Type
			}
			reply(req, true)
		default:
			ok, _ := ss.dch.SendRequest(req.Type, req.WantReply, req.Payload)
			reply(req, ok)
		}
	}
	// The channel closed upstream: let the output drain, then decide what
	// is known.
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
		BytesIn: bytesIn, BytesOut: out.n, BytesErr: errOut.n,
		OutputTail: tail.bytes(), ClientGone: gone,
	}
	switch {
	case ex.status != nil:
		end.Outcome, end.ExitStatus = journal.OutcomeExited, int(*ex.status)
	case ex.signal != nil:
		end.Outcome, end.Signal, end.CoreDumped, end.ErrorMsg = journal.OutcomeSignaled, ex.signal.Signal, ex.signal.CoreDumped, ex.signal.Msg
	case !up.alive(3 * time.Second):
		detail := "the connection to the host ended before the command's exit status arrived"
		if err := up.cause(); err != nil {
			detail += ": " + err.Error()
		}
		if _, err := s.cfg.Journal.MarkUnknown(e.ID, journal.Unknown{Reason: journal.ReasonUpstreamLost, Detail: detail}); err != nil {
			s.cfg.Log.Error("bastion: cannot journal an unknown outcome", "entry", e.ID, "err", err)
		}
		s.cfg.Log.Warn("bastion: outcome unknown", "entry", e.ID, "reason", "upstream_lost")
		ss.record(EventCommandUnknown, e, map[string]string{"reason": journal.ReasonUpstreamLost})
		ss.tellUnknown(e)
		return
	default:
		end.Outcome = journal.OutcomeClosedNoStatus
	}
	if _, err := s.cfg.Journal.End(e.ID, end); err != nil {
		s.cfg.Log.Error("bastion: cannot journal the end of a command", "entry", e.ID, "err", err)
	}
	s.cfg.Log.Info("bastion: command ended", "entry", e.ID, "outcome", end.Outcome, "status", end.ExitStatus, "signal", end.Signal, "client_gone", gone)
	ss.record(EventCommandEnded, e, map[string]string{"outcome": end.Outcome, "status": strconv.Itoa(end.ExitStatus), "signal": end.Signal, "client_gone": strconv.FormatBool(gone)})
	if ex.kind != "" {
		ss.dch.SendRequest(ex.kind, false, ex.raw)
	}
	ss.dch.CloseWrite()
	ss.dch.Close()
}

// tellUnknown tells the client that the outcome is unknown and sends no
// exit status, so that ssh exits 255.
func (ss *session) tellUnknown(e *journal.Entry) {
	fmt.Fprintf(ss.dch.Stderr(), "postern: the connection to %s was lost while the command was running; its outcome is UNKNOWN (journal entry %s). Do not retry blindly: see \"postern journal show %s\"\r\n", ss.info.target.Host, e.ID, e.ID)
	ss.dch.Close()
}
