package approvals

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/safetext"
)

// KindPolicyChange is the kind of a card that asks to put a looser
// configuration in force.
const KindPolicyChange = "policy_change"

// PolicyChange reports whether the card asks to put a looser
// configuration in force: it has no run, no destination, and no time
// limit (Expires is zero).
func (v *CardView) PolicyChange() bool { return v.Kind == KindPolicyChange }

// policyChange is what a policy change card carries.
type policyChange struct {
	changes []string
	apply   func() error
}

// ProposePolicy shows a policy change card listing changes (in
// [Loosening]'s words); apply runs when a person approves it, from
// outside every run. The card does not time out: the stricter policy
// stays in force until it is answered or replaced. A pending policy
// card is withdrawn by a newer proposal. It returns the card's id.
func (e *Engine) ProposePolicy(changes []string, apply func() error) string {
	e.WithdrawPolicy(audit.ReasonPolicyReplaced)
	now := e.now()
	c := &Card{done: make(chan struct{}), policy: &policyChange{changes: changes, apply: apply}}
	c.View = CardView{
		ID:      newCardID(),
		Kind:    KindPolicyChange,
		Reason:  audit.ReasonPolicyChange,
		Changed: "The configuration file changed and loosens authority; until this card is approved, the stricter of the old and new policies is in force:",
		Changes: changes,
		Mode:    audit.ModePerCall,
		Covers:  "the configuration file as it was read, once",
		Created: now.UTC(),
	}
	e.mu.Lock()
	e.addCardLocked(c)
	e.mu.Unlock()
	e.record(audit.Event{Type: audit.EventPolicyChangePending, Card: c.View.ID, Reason: audit.ReasonPolicyChange,
		Detail: map[string]string{"changes": strings.Join(changes, "; ")}})
	e.log.Warn("configuration change loosens authority; it waits for a person's approval", "card", c.View.ID, "changes", strings.Join(changes, "; "))
	return c.View.ID
}

// WithdrawPolicy removes a pending policy change card, if any, and
// records why (a policy card withdrawal reason): the card's
// policy_change_pending is not left without an outcome.
func (e *Engine) WithdrawPolicy(why audit.Reason) {
	e.mu.Lock()
	var gone []*Card
	for _, c := range e.cards {
		if c.policy != nil {
			e.dropCardLocked(c)
			close(c.done)
			gone = append(gone, c)
		}
	}
	e.mu.Unlock()
	for _, c := range gone {
		// A withdrawal changes no authority: what is in force was
		// recorded as it was put in force.
		if err := e.record(audit.Event{Type: audit.EventPolicyChangeWithdrawn, Card: c.View.ID, Reason: why}); err != nil {
			e.log.Error("policy change card withdrawal not recorded", "card", c.View.ID, "reason", why, "err", err)
		}
		e.log.Info("policy change card withdrawn", "card", c.View.ID, "reason", why)
	}
}

// ErrChangeCut refuses an approval of a policy change card that shows a
// change cut (cutChange): an approval covers what its card showed.
var ErrChangeCut = errors.New("refused: a change is longer than a card shows")

// answerPolicy decides a policy change card: an approval from outside
// every run applies the change; a denial leaves the stricter policy in
// force.
func (e *Engine) answerPolicy(c *Card, a Answer, approver *procid.Peer) error {
	approves := a.Verdict == VerdictOnce || a.Verdict == VerdictSession
	if approves {
		if cut := c.View.cutChange(); cut != "" {
			return fmt.Errorf("%w (%s); an approval covers what its card showed: shorten it in the config file, or deny", ErrChangeCut, cut)
		}
		if approver == nil {
			return fmt.Errorf("%w: a policy change is approved only on the console", ErrUnverified)
		}
		if err := e.OutsideRuns(approver, "policy change "+c.View.ID); err != nil {
			return err
		}
	}
	e.mu.Lock()
	if e.cards[c.View.ID] != c {
		e.mu.Unlock()
		return ErrNoCard
	}
	e.dropCardLocked(c)
	c.answer = a
	close(c.done)
	e.mu.Unlock()
	if !approves {
		// A denial lowers nothing: the stricter policy stays in force
		// whether or not it is recorded.
		if err := e.record(audit.Event{Type: audit.EventPolicyChangeDenied, Card: c.View.ID, Approver: a.Approver, Reason: audit.ReasonDenied,
			Detail: map[string]string{"changes": strings.Join(c.policy.changes, "; ")}}); err != nil {
			e.log.Error("policy change denial not recorded", "card", c.View.ID, "err", err)
		}
		e.log.Info("policy change denied; the stricter policy stays in force", "card", c.View.ID)
		return nil
	}
	if err := e.record(audit.Event{Type: audit.EventPolicyChangeApproved, Card: c.View.ID, Approver: a.Approver,
		Detail: map[string]string{"changes": strings.Join(c.policy.changes, "; ")}}); err != nil {
		return fmt.Errorf("%w; the change was not applied", ErrNotRecorded)
	}
	e.log.Info("policy change approved", "card", c.View.ID, "approver", a.Approver)
	return c.policy.apply()
}

// policyText renders a policy change card. Each change quotes the file
// (paths, patterns), so each is one escaped line.
func (v *CardView) policyText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow this change of postern's configuration?\n%s: %s\n", v.Reason, safetext.Field(v.Changed, safetext.Line))
	for _, c := range v.Changes {
		fmt.Fprintf(&b, "  - %s\n", safetext.Field(c, safetext.Line))
	}
	if cut := v.cutChange(); cut != "" {
		fmt.Fprintf(&b, "A change is longer than a card shows (%s): this card can only be denied; shorten it in the config file.\n", cut)
	}
	fmt.Fprintf(&b, "Card %s, %s (created %s)", v.ID, v.Reason, v.Created.Local().Format(time.TimeOnly))
	return b.String()
}

// DenyOnly says why the card can only be denied (the gateway refuses an
// approval of it), or is "" when it can be approved: the consoles offer
// no approval the gateway would refuse.
func (v *CardView) DenyOnly() string {
	if cut := v.cutChange(); cut != "" {
		return "a change is longer than a card shows (" + cut + ")"
	}
	return ""
}

// cutChange names the first change of a policy card that the card shows
// cut, or is "" when it shows them all whole.
func (v *CardView) cutChange() string {
	for i, c := range v.Changes {
		if !safetext.Whole(c, safetext.Line) {
			return fmt.Sprintf("change %d of %d, %d bytes", i+1, len(v.Changes), len(c))
		}
	}
	return ""
}
