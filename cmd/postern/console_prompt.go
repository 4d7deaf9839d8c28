package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/postern/postern/gateway/api"
)

// The full-screen console's rules for answering one card, apart from the
// screen so that tests can check them:
//   - a card takes a key only once it has been on screen for armDelay
//     with no key pressed, each key before that starting the wait again
//     (console.go: arm); the wait starts anew, and the terminal's pending
//     input is discarded, when a card arrives and when the cards tab is
//     shown again;
//   - the key pressed next after the selected card went away (answered
//     elsewhere, timed out, withdrawn) answers no card: it was meant for
//     that card, not for the one now under the cursor (console.go: gone),
//     and so is the key after an answer to it that failed, when the card
//     went while that answer was on its way (console.go: sentGone);
//   - a card the gateway would refuse to approve (CardView.DenyOnly)
//     offers a denial alone;
//   - every answer is echoed with the card's id;
//   - after an answer that was not applied, the card is asked afresh:
//     input discarded, armed anew, what was typed for it forgotten;
//   - a per-call card for a login takes a deliberate answer, the word
//     the line console asks too (Card.Word), never a single key; while it
//     is typed, every letter is part of it, j and k too, up to one past
//     the word's length;
//   - a session binds the subject marked on the card, preselected as the
//     card proposes (the agent), moved with the arrow keys or a digit:
//     choosing the run is one step, "s".

// cardPrompt reads a person's keys for one card.
type cardPrompt struct {
	card    api.Card
	subject int
	word    string // what approving takes when a key is not enough
	typed   string
}

func newCardPrompt(c api.Card) *cardPrompt {
	return &cardPrompt{card: c, subject: c.Selected, word: c.Word()}
}

// keyReply is what a key decided.
type keyReply struct {
	verdict api.Verdict // 0: not decided
	subject int         // for a session: the subject's index
	note    string      // what to tell the person
}

// question says how to answer the card.
func (p *cardPrompt) question() string {
	switch {
	case p.card.DenyOnly() != "":
		return fmt.Sprintf("card %s: it can only be denied: %s; d denies", p.card.ID, p.card.DenyOnly())
	case p.word != "":
		return fmt.Sprintf("card %s: type %s and Enter to approve this one use (d and Enter denies): %s", p.card.ID, shownWord(p.word), p.typed)
	case p.card.OffersSession() && len(p.card.Subjects) == 1:
		// The card's Run line names the one run a session can cover.
		return fmt.Sprintf("card %s: s approves this run until it exits, o this one use, d denies", p.card.ID)
	case p.card.OffersSession():
		return fmt.Sprintf("card %s: s approves the run marked below until it exits, o this one use, d denies; ←/→ or a digit marks another run", p.card.ID)
	}
	return fmt.Sprintf("card %s: o approves this one use, d denies", p.card.ID)
}

// key takes one key press, as Bubble Tea names it ("o", "enter", "left").
func (p *cardPrompt) key(k string) keyReply {
	if p.word != "" {
		switch {
		case k == "enter":
			// A denial first, as the question says and the line
			// console reads it: whatever the word, "d" never approves.
			switch typed := p.typed; {
			case answerVerdict(typed) == api.VerdictDeny:
				return keyReply{verdict: api.VerdictDeny, subject: -1}
			case typed == p.word:
				return keyReply{verdict: api.VerdictOnce, subject: -1}
			}
			p.typed = ""
			return keyReply{note: fmt.Sprintf("not approved: type %s exactly", shownWord(p.word))}
		case k == "backspace":
			if p.typed != "" {
				p.typed = p.typed[:len(p.typed)-1]
			}
		case k == "esc":
			p.typed = ""
		case (len(k) == 1 || k == "space") && len(p.typed) <= max(len(p.word), len("deny")):
			// One letter past the longest answer is kept, so that Enter
			// then says the word was not typed exactly; the rest of a
			// paste is not held.
			if k == "space" {
				k = " "
			}
			p.typed += k
		}
		return keyReply{}
	}
	n := len(p.card.Subjects)
	if why := p.card.DenyOnly(); why != "" && (k == "o" || k == "s") {
		return keyReply{note: "not approved: this card can only be denied: " + why}
	}
	switch k {
	case "d":
		return keyReply{verdict: api.VerdictDeny, subject: -1}
	case "o":
		return keyReply{verdict: api.VerdictOnce, subject: -1}
	case "s":
		if p.card.OffersSession() {
			return keyReply{verdict: api.VerdictSession, subject: p.subject}
		}
	case "left":
		if p.card.OffersSession() && p.subject > 0 {
			p.subject--
		}
	case "right":
		if p.card.OffersSession() && p.subject < n-1 {
			p.subject++
		}
	default:
		if i, err := strconv.Atoi(k); err == nil && p.card.OffersSession() && i >= 0 && i < n {
			p.subject = i
		}
	}
	return keyReply{}
}

// subjectsShown bounds the runs listed under a session card: a chain of
// up to 65 ancestors would make the card taller than most windows, and
// one cut to the window can only be denied.
const subjectsShown = 7

// subjects renders the runs a session could bind, the marked one with an
// arrow: all of them, or, past subjectsShown, those around the marked
// one, with how many more lie above and below (the arrow keys reach
// them). One run alone is not listed: the card's Run line names it, and
// the lines a list takes would keep a card from fitting 80×24.
func (p *cardPrompt) subjects() string {
	if !p.card.OffersSession() || len(p.card.Subjects) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The run a session covers:\n")
	n := len(p.card.Subjects)
	from := min(max(p.subject-subjectsShown/2, 0), max(n-subjectsShown, 0))
	to := min(from+subjectsShown, n)
	if from > 0 {
		fmt.Fprintf(&b, "  … %d more above (←)\n", from)
	}
	for i, s := range p.card.Subjects[from:to] {
		i += from
		mark := "  "
		if i == p.subject {
			mark = "▶ "
		}
		agent := ""
		if i == p.card.Selected {
			agent = "  (proposed)"
		}
		fmt.Fprintf(&b, "%s%d. %s%s\n", mark, i, subjectText(s.Name, s.PID, s.Exe), agent)
	}
	if to < n {
		fmt.Fprintf(&b, "  … %d more below (→)\n", n-to)
	}
	return b.String()
}
