package bastion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	gossh "golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/bastion/marker"
	"github.com/postern/postern/internal/procid"
)

// Resolve reads the remote markers of an entry whose outcome is unknown,
// over a fresh connection to its host, and records what they show: the
// command ran (with its status), is still running, never started, or the
// evidence does not tell. The connection is approved like any other use
// of a key, for requester, on a card that says it probes the entry.
func (s *Server) Resolve(ctx context.Context, id string, requester *procid.Peer) (*journal.Entry, error) {
	e, err := s.cfg.Journal.Get(id)
	if err != nil {
		return nil, err
	}
	if e.Status() != journal.StatusUnknown {
		return nil, fmt.Errorf("entry %s is %s: nothing to resolve", e.ID, e.Status())
	}
	if !e.Marker {
		return nil, fmt.Errorf("entry %s: %w on %s", e.ID, ErrNoMarkers, e.Target.Host)
	}
	if why := s.refusal(); why != "" {
		return nil, fmt.Errorf("the host of entry %s was not probed: %s", e.ID, why)
	}
	probe, err := marker.Probe(e.ID)
	if err != nil {
		return nil, err
	}
	t := Target{User: e.Target.User, Host: e.Target.Host, Port: e.Target.Port}
	info := &connInfo{id: "resolve-" + e.ID, target: t, requester: requester}
	ss := &session{s: s, info: info, probe: e.ID, ctx: ctx}
	probeEntry := &journal.Entry{Kind: journal.KindExec, Command: []byte(probe)}
	up, d, err := ss.upstreamFor(probeEntry)
	if uerr := undecided(d); uerr != nil {
		err = uerr
	}
	switch {
	case d != nil && !d.Allow && err == nil:
		return nil, fmt.Errorf("the probe was %w (%s)", ErrDenied, d.Reason)
	case err != nil:
		return nil, fmt.Errorf("probing %s: %w", t.Host, err)
	}
	defer up.client.Close()
	// The probe ends with its caller (postern journal resolve
	// interrupted, or past its time limit): a host that never answers
	// holds nothing, and nothing is recorded that the caller is not told.
	stop := context.AfterFunc(ctx, func() { up.client.Close() })
	defer stop()
	if names := hostKeyNames(up.hostKey); e.Target.HostKey != "" && !slices.Contains(names, e.Target.HostKey) {
		return nil, fmt.Errorf("the host key of %s is now %s, not %s as when the command ran; refusing to trust its markers", t.Host, names[0], e.Target.HostKey)
	}
	sess, err := up.client.NewSession()
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	out := &probeOutput{cut: func() { sess.Close() }}
	sess.Stdout = out
	runErr := sess.Run(probe)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the probe of entry %s on %s was cut off, and nothing recorded: %w", e.ID, t.Host, context.Cause(ctx))
	}
	if ee, ok := errors.AsType[*gossh.ExitError](runErr); ok && ee.ExitStatus() == 0 {
		runErr = nil
	}
	res, err := marker.ParseProbe(e.ID, out.buf.Bytes(), !e.Dispatched.IsZero())
	if out.over {
		err = fmt.Errorf("its output went on past %d bytes, where it was cut", marker.MaxProbeOutput)
	}
	if err != nil {
		// The probe was sent and gave no answer: that is evidence of
		// nothing, never of a command that did not start.
		res = journal.Resolution{Result: journal.ResultInconclusive, Evidence: unanswered(t.Host, err, runErr, out.buf.Bytes())}
	}
	res.By = journal.ByProbe
	return s.resolve(e.ID, res, "")
}

// unanswered is the evidence of a probe that gave no complete report.
func unanswered(host string, parseErr, runErr error, out []byte) string {
	ev := "the probe gave no answer: " + parseErr.Error()
	if runErr != nil {
		ev += "; running it on " + host + ": " + runErr.Error()
	}
	const show = 2 << 10
	if len(out) > show {
		out = out[:show]
	}
	return ev + fmt.Sprintf("\n\nits output (%d bytes shown):\n%q", len(out), out)
}

// ResolveByHand records what a person found out about an entry.
func (s *Server) ResolveByHand(id string, res journal.Resolution, approver string) (*journal.Entry, error) {
	res.By = journal.ByUser
	return s.resolve(id, res, approver)
}

// resolve resolves entry id with res, recorded in the audit log first and
// in the journal only once it is (intent before effect, as a command's
// start): resolving lets an identical command run again, and one the
// audit log cannot record is not made. approver is who resolved it by
// hand ("" when the markers did).
func (s *Server) resolve(id string, res journal.Resolution, approver string) (*journal.Entry, error) {
	e, err := s.cfg.Journal.Get(id)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Journal.CheckResolve(e, res); err != nil {
		return nil, err
	}
	extra := map[string]string{"result": res.Result, "by": res.By}
	if approver != "" {
		extra["approver"] = approver
	}
	if res.ExitStatus != nil {
		extra["status"] = strconv.Itoa(*res.ExitStatus)
	}
	if err := s.recordEntry(audit.EventCommandResolved, e, extra); err != nil {
		return nil, fmt.Errorf("the audit log cannot record the resolution of entry %s, so it was not made: %w", e.ID, err)
	}
	return s.cfg.Journal.Resolve(e.ID, res)
}

// Journal returns the command journal.
func (s *Server) Journal() *journal.Journal { return s.cfg.Journal }

// probeOutput keeps the head of a probe's output, up to marker.MaxProbeOutput;
// past it, it calls cut (which ends the session) and takes no more.
type probeOutput struct {
	buf  bytes.Buffer
	over bool
	cut  func()
}

func (o *probeOutput) Write(p []byte) (int, error) {
	if room := marker.MaxProbeOutput - o.buf.Len(); len(p) > room {
		o.buf.Write(p[:room])
		if !o.over {
			o.over = true
			o.cut()
		}
		return room, errProbeOutputCut
	}
	return o.buf.Write(p)
}

// errProbeOutputCut ends the copy of a probe's output past marker.MaxProbeOutput.
var errProbeOutputCut = errors.New("the probe's output was cut")
