package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/notify"
	"github.com/postern/postern/internal/sessionbus"
)

// The actions a card's desktop notification offers. A session is
// approved only from the console or askpass, where the run it covers is
// shown and chosen.
const (
	actionOnce = "approve-once"
	actionDeny = "deny"
)

// notifier shows cards as desktop notifications, with Approve once and
// Deny buttons when the service has them.
type notifier struct {
	g   *Gateway
	svc *notify.Service
	// moved is when a card's notification last appeared or went away
	// (unix ns): the others may have moved under the pointer then.
	moved atomic.Int64
}

func newNotifier(g *Gateway) *notifier {
	addr, _ := sessionbus.Address(g.opts.Env)
	return &notifier{g: g, svc: notify.New(addr, g.log)}
}

func (n *notifier) Name() string { return "notification" }

func (n *notifier) Reachable() (bool, string) {
	st, err := n.svc.Status()
	if err != nil {
		return false, err.Error()
	}
	what := st.Server
	if what == "" {
		what = st.Owner
	}
	if st.PID > 0 {
		what += fmt.Sprintf(" (pid %d)", st.PID)
	}
	if !st.Actions() {
		return true, what + ", without buttons: answer in postern approve"
	}
	return true, what + ", with Approve once and Deny"
}

func (n *notifier) Show(ctx context.Context, c approvals.CardView) {
	n.move()
	closed, err := n.svc.Show(ctx, cardNote(&c), func(inv notify.Invoked) { n.answer(c.ID, inv) })
	if err != nil {
		n.g.log.Info("card not shown as a notification", "card", c.ID, "err", err)
		return
	}
	// Shown only now: the calls that show it (a slow service's) count
	// for no reading time.
	n.move()
	select {
	case <-ctx.Done():
	case <-closed:
	}
	n.move()
}

// move notes that a card's notification appears or goes away now.
func (n *notifier) move() { n.moved.Store(time.Now().UnixNano()) }

// cardNote is the notification of card c: Approve once and Deny, or
// Deny alone where approving takes a name typed out (a per-call login:
// CardView.Word), which a click is not.
func cardNote(c *approvals.CardView) notify.Note {
	note := notify.Note{
		App:      "postern",
		Summary:  "postern: card " + c.ID,
		Body:     c.Text() + "\n\nApprove once or deny here; approve the run with postern approve.",
		Actions:  []notify.Action{{Key: actionOnce, Label: "Approve once"}, {Key: actionDeny, Label: "Deny"}},
		Timeout:  c.Expires.Sub(c.Created),
		Critical: true,
	}
	if w := c.Word(); w != "" {
		note.Body = c.Text() + "\n\nDeny here; to approve, type " + c.QuotedWord() + " in postern approve."
		note.Actions = note.Actions[1:]
	}
	return note
}

// answer applies an action the notification service reported, as an
// answer from the service's process: the engine refuses it if that
// process is inside the requester's or the run's tree or session. An
// approval clicked less than approvals.ReadTime after a card's
// notification appeared or went away (this one appearing, or another
// moving it under the pointer) is not taken.
func (n *notifier) answer(card string, inv notify.Invoked) {
	up := time.Since(time.Unix(0, n.moved.Load()))
	v := approvals.VerdictDeny
	switch inv.Action {
	case actionOnce:
		v = approvals.VerdictOnce
	case actionDeny:
	default:
		return // the default action (a click on the body): no answer
	}
	if v == approvals.VerdictOnce && up < approvals.ReadTime {
		n.g.log.Warn("notification approval not taken: it came before the card could be read; approve in postern approve", "card", card, "after", up.Round(time.Millisecond))
		return
	}
	if v == approvals.VerdictOnce {
		// Whoever reported the action, a card whose approval takes a
		// name typed out is not approved by a click.
		cards, _ := n.g.engine.Cards()
		for i := range cards {
			if cards[i].ID == card && cards[i].Word() != "" {
				n.g.log.Warn("notification approval refused: the card is approved by typing the destination's name in postern approve", "card", card)
				return
			}
		}
	}
	peer, err := n.g.procs.Pin(inv.PID)
	if err != nil {
		n.g.log.Warn("notification answer refused: its process cannot be identified", "card", card, "pid", inv.PID, "err", err)
		return
	}
	defer peer.Close()
	a := approvals.Answer{Verdict: v, Subject: -1, Approver: "notification: " + peer.Describe()}
	if err := n.g.engine.Answer(card, a, peer); err != nil && !errors.Is(err, approvals.ErrNoCard) {
		n.g.log.Warn("notification answer refused", "card", card, "err", err)
	}
}
