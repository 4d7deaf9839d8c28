package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// A Confirmer asks a person a yes/no question (an SSH_ASKPASS dialog).
// An error means the question could not be asked, which is never a yes.
type Confirmer interface {
	Confirm(ctx context.Context, prompt string) (bool, error)
}

// Engine is the gateway's Decider and the keeper of runs, grants and
// cards. All its state lives in memory; only display context (Past) is
// written to disk.
type Engine struct {
	Procs  *procid.Table
	Log    *slog.Logger
	BootID string
	// Vault reports whether the vault is locked and the current epoch.
	Vault func() (locked bool, epoch uint64)
	// Askpass, when set, is shown every card as an extra approver.
	Askpass Confirmer
	// ContextFile keeps display context across restarts; "" keeps none.
	ContextFile string
	// OnRunEnd is called (without locks held) when a run ends.
	OnRunEnd func(*Run)
	// Audit, when set, receives every authority change and action; an
	// action whose event cannot be recorded is refused.
	Audit Recorder
	// Now returns the time; nil means time.Now.
	Now func() time.Time

	policy atomic.Pointer[Policy]

	mu       sync.Mutex
	runs     map[string]*Run
	grants   map[string]*Grant
	cards    map[string]*Card
	past     []Past
	cooldown map[string]time.Time
	version  uint64
	changed  chan struct{}
}

// SetPolicy installs p for the requests decided from now on.
func (e *Engine) SetPolicy(p *Policy) { e.policy.Store(p) }

// Policy returns the policy in force.
func (e *Engine) Policy() *Policy { return e.policy.Load() }

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) init() {
	if e.runs == nil {
		e.runs = map[string]*Run{}
		e.grants = map[string]*Grant{}
		e.cards = map[string]*Card{}
		e.cooldown = map[string]time.Time{}
		e.changed = make(chan struct{})
	}
}

// notify wakes approvers waiting for the card list to change; e.mu held.
func (e *Engine) notify() {
	e.version++
	close(e.changed)
	e.changed = make(chan struct{})
}

func allow(mode Mode, reason string) Decision {
	return Decision{Allow: true, Mode: mode, Reason: reason}
}
func deny(mode Mode, reason string) Decision { return Decision{Mode: mode, Reason: reason} }

// Decide decides a request. It never waits while the vault is locked; it
// re-checks the epoch after a person answers; a session grant covers the
// request only after the run, its nonce, the boot id and the epoch have
// been checked against live evidence.
func (e *Engine) Decide(ctx context.Context, r *Request) Decision {
	d := e.decide(ctx, r)
	return e.conclude(r, d)
}

// conclude records a decision: a denial as action_denied; an allowed
// action as sign (or command_approved), durable before the action runs. If
// that record cannot be written the action is refused.
func (e *Engine) conclude(r *Request, d Decision) Decision {
	if !d.Allow {
		ev := requestEvent(audit.EventActionDenied, r, d)
		// A refused re-approval is recorded with what ended the earlier
		// approval: the request was denied because of it.
		if why, ok := strings.CutPrefix(d.CardReason, "REAUTH_REQUIRED "); ok {
			ev.Reason = why
			ev.Detail["answer"] = d.Reason
		}
		if d.Card != "" {
			ev.Card = d.Card
		}
		if ev.Run == "" {
			ev.Run = d.Run
		}
		e.record(ev)
		return d
	}
	typ := audit.EventSign
	if r.Action == ActionCommand {
		typ = EventCommandApproved
	}
	ev := requestEvent(typ, r, d)
	ev.Card = d.Card
	if ev.Run == "" {
		ev.Run = d.Run
	}
	if err := e.record(ev); err != nil {
		return Decision{Mode: d.Mode, Reason: "audit_failed"}
	}
	return d
}

// Refused records a request refused before any decision was asked for
// (the agent was locked, the key is unknown, the request broke the
// connection's session binding).
func (e *Engine) Refused(r *Request, reason string) {
	e.record(requestEvent(audit.EventActionDenied, r, Decision{Reason: reason}))
}

func (e *Engine) decide(ctx context.Context, r *Request) Decision {
	locked, epoch := e.Vault()
	if locked {
		return deny("", ReasonVaultLocked)
	}
	p := e.Policy()
	// The requester's ancestry and command line are read only when needed:
	// for rules on executables, for hashed known_hosts entries, for cards.
	var chain procid.Chain
	ancestry := func() procid.Chain {
		if chain == nil {
			chain = append(procid.Chain{r.Requester.Process}, e.Procs.Ancestors(&r.Requester.Process)...)
		}
		return chain
	}
	var argv []string
	var dest *DestView
	if r.Dest != nil {
		res := p.Hosts.Lookup(r.Dest.HostKey, nil)
		if res.Hashed > 0 {
			argv = readArgv(e.Procs, r.Requester.PID)
			res = p.Hosts.Lookup(r.Dest.HostKey, hostCandidates(argv))
		}
		if res.Revoked {
			return deny("", "host_key_revoked")
		}
		dest = &DestView{Fingerprint: r.Dest.Fingerprint(), Names: res.Names, Hashed: res.Hashed, Forwarding: r.Dest.Forwarding, User: r.Dest.User}
	}
	f := facts{key: r.Key, chain: ancestry}
	if dest != nil {
		f.names = dest.Names
	}
	mode := p.modeFor(&f, r.Forwarded || (dest != nil && dest.Forwarding))
	if r.Key.Confirm || r.RetryOf != "" {
		mode = Stricter(mode, ModePerCall)
	}
	switch mode {
	case ModeDeny:
		return deny(mode, "policy_deny")
	case ModeNone:
		return allow(mode, "policy_none")
	case ModeSession:
		if g := e.covering(r, dest, epoch, p); g != nil {
			return Decision{Allow: true, Mode: mode, Reason: "session", Grant: g.ID, Run: g.Run.ID}
		}
	}
	if argv == nil {
		argv = readArgv(e.Procs, r.Requester.PID)
	}
	return e.ask(ctx, r, mode, ancestry(), argv, dest, epoch, p)
}

// covering returns a live grant that covers r, checking each candidate
// against live evidence and ending those that no longer hold.
func (e *Engine) covering(r *Request, dest *DestView, epoch uint64, p *Policy) *Grant {
	e.mu.Lock()
	e.init()
	var cands []*Grant
	for _, g := range e.grants {
		if g.Key.Fingerprint == r.Key.Fingerprint {
			cands = append(cands, g)
		}
	}
	e.mu.Unlock()
	now := e.now()
	for _, g := range cands {
		switch {
		case g.BootID != e.BootID:
			e.endGrant(g, ReasonGatewayRestarted)
			continue
		case g.Epoch != epoch:
			e.endGrant(g, ReasonVaultChanged)
			continue
		case !g.Expires.IsZero() && !now.Before(g.Expires):
			e.endGrant(g, ReasonExpired)
			continue
		case g.Dest != "" && (dest == nil || dest.Fingerprint != g.Dest):
			continue
		}
		run := g.Run
		if reason, ok := run.check(); !ok {
			e.EndRun(run.ID, reason)
			continue
		}
		if g.Nonce != run.Nonce {
			continue
		}
		if ok, _ := e.Procs.DescendsFrom(r.Requester.PID, r.Requester.StartTicks, &run.Process); ok {
			return g
		}
	}
	return nil
}

// ask shows a card and waits for its answer or its timeout.
func (e *Engine) ask(ctx context.Context, r *Request, mode Mode, chain procid.Chain, argv []string, dest *DestView, epoch uint64, p *Policy) Decision {
	subjects, sel, err := e.subjects(r, chain, p)
	if err != nil {
		e.Log.Info("refusing: "+err.Error(), "pid", r.Requester.PID)
		return deny(mode, ReasonProcessExited)
	}
	subj := subjects[sel]
	coolKey := subjectKey(subj)
	e.mu.Lock()
	e.init()
	if until, ok := e.cooldown[coolKey]; ok && e.now().Before(until) {
		e.mu.Unlock()
		return deny(mode, "cooldown")
	}
	joinKey := ""
	if mode == ModeSession {
		joinKey = coolKey + "|" + r.Key.Fingerprint
		if dest != nil {
			joinKey += "|" + dest.Fingerprint
		}
		for _, c := range e.cards {
			if c.joinKey == joinKey {
				e.mu.Unlock()
				return e.wait(ctx, c, mode, p)
			}
		}
	}
	e.mu.Unlock()

	destText := ""
	if dest != nil {
		destText = " for " + destTextOf(dest)
	} else if r.Purpose == PurposeSSHSig {
		destText = " to sign (namespace " + r.Namespace + ")"
	}
	reason, sentence := CardPerCall, "This use needs approval every time: approve this one use of key "+r.Key.Display()+destText+"."
	if r.RetryOf != "" {
		reason, sentence = CardRetryUnknown, "The same command was sent before and its outcome is unknown: "+r.RetryOf+". Approve only if you checked that running it again is safe."
	}
	covers := "this call only"
	if mode == ModeSession {
		reason, sentence = e.reauth(subj, r.Key, destText)
		covers = "this run and its descendants, for key " + r.Key.Display()
		if p.Scope == ScopeDestination && dest != nil {
			covers += " to " + destTextOf(dest)
		}
		covers += ", until the run exits, the vault locks or the gateway restarts"
	}
	now := e.now()
	c := &Card{
		req:        r,
		epoch:      epoch,
		subjects:   subjects,
		joinKey:    joinKey,
		cooldownAs: coolKey,
		done:       make(chan struct{}),
	}
	c.View = CardView{
		ID:          "C" + randomHex(4),
		Reason:      reason,
		Changed:     sentence,
		Mode:        mode,
		Selected:    sel,
		Key:         KeyView{Fingerprint: r.Key.Fingerprint, Comment: r.Key.Comment, Type: r.Key.Type},
		Purpose:     r.Purpose,
		Destination: dest,
		Namespace:   r.Namespace,
		Forwarded:   r.Forwarded || (dest != nil && dest.Forwarding),
		Covers:      covers,
		Claim:       argv,
		Command:     printable(r.Command),
		Created:     now.UTC(),
		Expires:     now.Add(p.CardTimeout).UTC(),
	}
	for i := range subjects {
		c.View.Subjects = append(c.View.Subjects, e.runView(subjects[i]))
	}
	c.View.Run = c.View.Subjects[sel]
	for i := range chain {
		c.View.Requester = append(c.View.Requester, e.processView(&chain[i]))
	}
	e.mu.Lock()
	e.cards[c.View.ID] = c
	e.notify()
	e.mu.Unlock()
	ev := requestEvent(audit.EventCardShown, r, Decision{Mode: mode, Reason: reason})
	ev.Card, ev.Run, ev.Label = c.View.ID, subj.ID, subj.Label
	e.record(ev)
	e.Log.Info("card shown", "card", c.View.ID, "reason", reason, "mode", mode, "key", r.Key.Fingerprint, "pid", r.Requester.PID)
	if e.Askpass != nil {
		go e.askpass(c)
	}
	return e.wait(ctx, c, mode, p)
}

// wait waits for c's answer, its timeout or the caller's end.
func (e *Engine) wait(ctx context.Context, c *Card, mode Mode, p *Policy) Decision {
	d := e.waitAnswer(ctx, c, mode, p)
	d.Card, d.CardReason = c.View.ID, c.View.Reason
	if d.Run == "" {
		d.Run = c.View.Run.ID
	}
	return d
}

func (e *Engine) waitAnswer(ctx context.Context, c *Card, mode Mode, p *Policy) Decision {
	timer := time.NewTimer(time.Until(c.View.Expires))
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		e.mu.Lock()
		if e.cards[c.View.ID] == c {
			delete(e.cards, c.View.ID)
			e.cooldown[c.cooldownAs] = e.now().Add(p.Cooldown)
			e.notify()
			e.mu.Unlock()
			e.Log.Info("card unanswered", "card", c.View.ID)
			return deny(mode, "timeout")
		}
		e.mu.Unlock()
		<-c.done
	case <-ctx.Done():
		e.removeCard(c)
		return deny(mode, "canceled")
	}
	a := c.answer
	if a.Decision == "deny" || a.Decision == "" {
		reason := "denied"
		if a.Approver == "" {
			reason = ReasonVaultLocked
		}
		return deny(mode, reason)
	}
	// An answer given across a lock or unlock authorizes nothing.
	if locked, epoch := e.Vault(); locked || epoch != c.epoch {
		return deny(mode, "vault_state_changed")
	}
	if a.Decision == "session" && mode == ModeSession {
		d := allow(mode, "approved_session")
		d.Grant, d.Run = a.grant, a.run
		return d
	}
	return allow(mode, "approved_once")
}

func (e *Engine) removeCard(c *Card) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cards[c.View.ID] == c {
		delete(e.cards, c.View.ID)
		e.notify()
	}
}

func subjectKey(r *Run) string {
	if r.ID != "" {
		return r.ID
	}
	return fmt.Sprintf("pid:%d:%d", r.Process.PID, r.Process.StartTicks)
}

// subjects returns who a session approval could bind: the run a run
// socket belongs to, or the requester and its live ancestors (init and
// other users' processes excluded), with the index to preselect.
func (e *Engine) subjects(r *Request, chain procid.Chain, p *Policy) ([]*Run, int, error) {
	if r.Channel.Kind == "run" {
		e.mu.Lock()
		run := e.runs[r.Channel.Run]
		e.mu.Unlock()
		if run == nil || run.Ended() != "" {
			return nil, 0, fmt.Errorf("run %s has ended", r.Channel.Run)
		}
		return []*Run{run}, 0, nil
	}
	var out []*Run
	sel := -1
	for i := range chain {
		pr := chain[i]
		if pr.PID <= 1 || pr.UID != r.Requester.UID {
			break
		}
		out = append(out, &Run{Process: pr})
		if sel < 0 && p.isAgent(&pr, readArgv(e.Procs, pr.PID)) {
			sel = len(out) - 1
		}
	}
	if len(out) == 0 {
		out = []*Run{{Process: r.Requester.Process}}
	}
	if sel < 0 {
		sel = 0
	}
	return out, sel, nil
}

// Errors of Answer.
var (
	ErrNoCard      = errors.New("no such card (answered, expired, or from before a gateway restart)")
	ErrSelfApprove = errors.New("refused: an approval cannot come from the requesting process, the run, or a descendant of either")
	ErrSameSession = errors.New("refused: an approval cannot come from the terminal session of the requesting process or the run; approve from another terminal")
)

// Answer decides card id. approver is the verified process that sent the
// answer (nil for the gateway's own askpass dialog); it must not be the
// requester, the subject, or a descendant of either. A session answer
// registers the chosen subject (a.Subject, or the preselected one when
// negative) as a run, pinning it, and grants it the key.
func (e *Engine) Answer(id string, a Answer, approver *procid.Peer) error {
	e.mu.Lock()
	c := e.cards[id]
	e.mu.Unlock()
	if c == nil {
		return ErrNoCard
	}
	if a.Subject < 0 {
		a.Subject = c.View.Selected
	}
	if a.Decision == "session" && (a.Subject < 0 || a.Subject >= len(c.subjects)) {
		return fmt.Errorf("no subject %d on card %s (it has %d)", a.Subject, id, len(c.subjects))
	}
	subj := c.subjects[c.View.Selected]
	if a.Decision == "session" {
		subj = c.subjects[a.Subject]
	}
	// A denial only lowers authority: anyone may give it.
	if approver != nil && a.Decision != "deny" {
		for _, p := range []*procid.Process{&c.req.Requester.Process, &subj.Process} {
			if in, _ := e.Procs.DescendsFrom(approver.PID, approver.StartTicks, p); in {
				e.Log.Warn("approval refused: it came from inside the requesting process tree", "card", id, "approver_pid", approver.PID)
				return ErrSelfApprove
			}
			// A process that left the tree (a double fork) keeps its
			// session unless it also called setsid.
			if p.Session > 0 && approver.Session == p.Session {
				e.Log.Warn("approval refused: it came from the requester's terminal session", "card", id, "approver_pid", approver.PID, "session", p.Session)
				return ErrSameSession
			}
		}
	}
	var g *Grant
	if a.Decision == "session" && c.View.Mode == ModeSession {
		run, err := e.register(subj)
		if err != nil {
			return err
		}
		p := e.Policy()
		g = &Grant{
			ID: newGrantID(), Run: run, Nonce: run.Nonce, BootID: e.BootID, Epoch: c.epoch,
			Key: c.req.Key, Approver: a.Approver, Created: e.now(),
		}
		if p.Scope == ScopeDestination && c.View.Destination != nil {
			g.Dest, g.DestNames = c.View.Destination.Fingerprint, c.View.Destination.Names
		}
		if p.Lifetime > 0 {
			g.Expires = g.Created.Add(p.Lifetime)
		}
	}
	// Read before taking e.mu: the vault calls EpochChanged with its own
	// lock held. A grant stored from a stale epoch never covers anything
	// (covering checks the epoch again).
	_, epoch := e.Vault()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cards[id] != c {
		return ErrNoCard
	}
	if g != nil {
		if epoch != c.epoch {
			g = nil // answered across a lock or unlock: no grant
		} else {
			e.grants[g.ID] = g
		}
	}
	attrs := []any{"card", id, "decision", a.Decision, "approver", a.Approver}
	if g != nil {
		attrs = append(attrs, "grant", g.ID, "run", g.Run.ID)
		// Recorded before the waiting request can use the grant; the epoch
		// is given, so recording does not ask the vault (whose lock must
		// not be taken under e.mu).
		ev := audit.Event{
			Type: audit.EventSessionApproved, Run: g.Run.ID, Grant: g.ID, Card: id, Key: g.Key.Fingerprint,
			Dest: g.Dest, DestNames: g.DestNames, Mode: string(ModeSession), Approver: a.Approver,
			Label: g.Run.Label, Process: auditProcess(e.Procs, &g.Run.Process), VaultEpoch: g.Epoch,
			Detail: map[string]string{"nonce_bound": "true", "launched": strconv.FormatBool(g.Run.Launched)},
		}
		a.grant, a.run = g.ID, g.Run.ID
		if err := e.record(ev); err != nil {
			delete(e.grants, g.ID)
			a.Decision = "deny"
			delete(e.cards, id)
			c.answer = a
			close(c.done)
			e.notify()
			return fmt.Errorf("%w; the approval was not applied", ErrNotRecorded)
		}
	}
	delete(e.cards, id)
	c.answer = a
	close(c.done)
	e.notify()
	e.Log.Info("card answered", attrs...)
	return nil
}

// register makes a chosen subject a run: pinned, with a launch nonce.
func (e *Engine) register(subj *Run) (*Run, error) {
	if subj.ID != "" {
		if reason, ok := subj.check(); !ok {
			return nil, fmt.Errorf("run %s has ended (%s)", subj.ID, reason)
		}
		return subj, nil
	}
	pin, err := e.Procs.Pin(subj.Process.PID)
	if err != nil {
		return nil, fmt.Errorf("the chosen process is gone: %w", err)
	}
	if pin.StartTicks != subj.Process.StartTicks || !pin.Exe.Same(subj.Process.Exe) {
		pin.Close()
		return nil, fmt.Errorf("pid %d is no longer the process shown on the card", subj.Process.PID)
	}
	run := &Run{
		ID: newRunID(), Nonce: randomHex(16), Process: pin.Process, Argv: readArgv(e.Procs, pin.PID),
		Started: e.now(), pin: pin,
	}
	e.addRun(run)
	e.recordRun(run)
	return run, nil
}

// addRun records a live run and ends it when its process exits.
func (e *Engine) addRun(run *Run) {
	e.mu.Lock()
	e.init()
	e.runs[run.ID] = run
	e.mu.Unlock()
	if ch := run.pin.Exited(); ch != nil {
		go func() {
			<-ch
			e.EndRun(run.ID, ReasonProcessExited)
		}()
	}
}

// EndRun ends a run and its grants.
func (e *Engine) EndRun(id, reason string) {
	e.mu.Lock()
	run := e.runs[id]
	if run == nil || run.Ended() != "" {
		e.mu.Unlock()
		return
	}
	run.ended.Store(&reason)
	run.endedAt = e.now()
	delete(e.runs, id)
	ended := 0
	for gid, g := range e.grants {
		if g.Run == run {
			e.endGrantLocked(gid, g, reason)
			ended++
		}
	}
	if ended == 0 {
		e.past = append(e.past, pastOf(e.BootID, run, nil, reason, run.endedAt))
	}
	e.savePastLocked()
	e.mu.Unlock()
	e.Log.Info("run ended", "run", id, "reason", reason, "grants", ended)
	if run.pin != nil {
		run.pin.Close()
	}
	if e.OnRunEnd != nil {
		e.OnRunEnd(run)
	}
}

func (e *Engine) endGrant(g *Grant, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.grants[g.ID] == g {
		e.endGrantLocked(g.ID, g, reason)
		e.savePastLocked()
	}
}

func (e *Engine) endGrantLocked(id string, g *Grant, reason string) {
	delete(e.grants, id)
	g.ended = reason
	e.record(audit.Event{Type: audit.EventSessionEnded, Run: g.Run.ID, Grant: id, Key: g.Key.Fingerprint, Reason: reason, Label: g.Run.Label, VaultEpoch: g.Epoch})
	e.past = append(e.past, pastOf(e.BootID, g.Run, g, reason, e.now()))
	if len(e.past) > maxPast {
		e.past = e.past[len(e.past)-maxPast:]
	}
	e.Log.Info("session ended", "grant", id, "run", g.Run.ID, "reason", reason)
}

func (e *Engine) savePastLocked() {
	if err := savePast(e.ContextFile, e.past); err != nil {
		e.Log.Warn("cannot save display context", "err", err)
	}
}

// EpochChanged ends every grant and refuses every pending card: nothing
// decided in an earlier vault epoch authorizes anything.
func (e *Engine) EpochChanged(why string) {
	reason := ReasonVaultChanged
	if why == "lock" {
		reason = ReasonVaultLocked
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
	for id, g := range e.grants {
		e.endGrantLocked(id, g, reason)
	}
	for id, c := range e.cards {
		delete(e.cards, id)
		c.answer = Answer{Decision: "deny"}
		close(c.done)
	}
	e.notify()
	e.savePastLocked()
}

// Revoke ends grants now: a grant id, every grant of a run id, or all
// (target "--all"). It returns how many grants ended.
func (e *Engine) Revoke(target string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
	n := 0
	for id, g := range e.grants {
		if target == "--all" || id == target || g.Run.ID == target {
			e.endGrantLocked(id, g, ReasonRevoked)
			n++
		}
	}
	if n == 0 && target != "--all" {
		if _, ok := e.runs[target]; !ok {
			return 0, fmt.Errorf("no grant or run %q (postern sessions lists them)", target)
		}
	}
	e.savePastLocked()
	return n, nil
}

// Cards returns the pending cards, oldest first, and a version that
// WaitCards can wait past.
func (e *Engine) Cards() ([]CardView, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.init()
	out := make([]CardView, 0, len(e.cards))
	for _, c := range e.cards {
		out = append(out, c.View)
	}
	slices.SortFunc(out, func(a, b CardView) int { return a.Created.Compare(b.Created) })
	return out, e.version
}

// WaitCards waits until the card list changes after version, or ctx ends.
func (e *Engine) WaitCards(ctx context.Context, version uint64) {
	e.mu.Lock()
	e.init()
	if e.version != version {
		e.mu.Unlock()
		return
	}
	ch := e.changed
	e.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// askpass shows a card in an SSH_ASKPASS dialog; yes approves it as the
// policy asks (a session for the preselected subject, or this call).
func (e *Engine) askpass(c *Card) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	ok, err := e.Askpass.Confirm(ctx, c.View.Text())
	if err != nil {
		if ctx.Err() == nil {
			e.Log.Debug("askpass not available for card", "card", c.View.ID, "err", err)
		}
		return
	}
	a := Answer{Decision: "deny", Approver: "askpass"}
	if ok {
		a = Answer{Decision: "once", Subject: c.View.Selected, Approver: "askpass"}
		if c.View.Mode == ModeSession {
			a.Decision = "session"
		}
	}
	if err := e.Answer(c.View.ID, a, nil); err != nil && !errors.Is(err, ErrNoCard) {
		e.Log.Warn("askpass answer not applied", "card", c.View.ID, "err", err)
	}
}

// readArgv reads /proc/PID/cmdline: what the process says it is running.
// It is shown as a claim and used for display choices, never for
// authority.
func readArgv(t *procid.Table, pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", t.Root, pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func destTextOf(d *DestView) string { return destText(d) }

// printable renders command bytes for a card: valid UTF-8 as is (control
// characters escaped), anything else quoted.
func printable(b []byte) string {
	if b == nil {
		return ""
	}
	return strings.Trim(fmt.Sprintf("%q", b), `"`)
}
