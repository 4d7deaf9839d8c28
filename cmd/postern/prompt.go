package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/safetext"
)

// The approver console's rules, apart from the terminal (approve.go) so
// that any console (the line console here, a full-screen one) keeps
// them, and tests can check them:
//
//   - pending input is discarded before each card is shown, so keys typed
//     ahead never answer a card nobody has seen (discardInput), and the
//     question comes once no line was typed for armDelay after the card
//     (settle), so a program typing answers without a pause never answers;
//   - every answer is echoed with the card's id;
//   - a per-call card for a login asks for a deliberate answer: the
//     destination's inventory name (or "unknown" for a destination with
//     none, or none proved) typed out, never a single key (Card.Word,
//     which the full-screen console asks too);
//   - a card the gateway would refuse to approve (CardView.DenyOnly)
//     offers a denial alone;
//   - a card taller than the terminal can only be denied, or shown
//     again (an empty line) once the terminal is tall enough: its top
//     went off the screen before the question;
//   - after an error the console starts over clean: pending input
//     discarded, the next card asked afresh, or, after an answer not
//     applied to a card still pending, that card asked again.

// shownWord renders the word approving a card takes typed out
// (Card.Word) for the person who types it: escaped and whole (see
// CardView.QuotedWord).
func shownWord(w string) string { return safetext.Escape(w) }

// subjectText names a run a session could cover, in the consoles' list
// of them: its name, pid and executable, escaped. A run the person marks
// is one the card's own lines may not describe, and its name is what the
// requester chose.
func subjectText(name string, pid int, exe string) string {
	s := fmt.Sprintf("%s (pid %d)", shownName(name), pid)
	if exe != "" {
		s += " " + safetext.Field(exe, safetext.Path)
	}
	return s
}

// A prompt reads one person's answer to one card.
type prompt struct {
	card    api.Card
	subject int
	// word is what approving takes when a key is not enough.
	word string
	// tall: the card is taller than the terminal, and can only be
	// denied, or shown again (an empty line) once the terminal is tall
	// enough.
	tall bool
}

func newPrompt(c api.Card) *prompt {
	return &prompt{card: c, subject: c.Selected, word: c.Word()}
}

// question is what the console asks, with the card's id.
func (p *prompt) question() string {
	var q string
	switch {
	case p.card.DenyOnly() != "":
		q = "it can only be denied: " + p.card.DenyOnly() + "; [d]eny"
	case p.tall:
		q = "it is taller than this terminal, whose screen lost its top: make the terminal taller and press Enter to see it whole and approve it, or [d]eny"
	case p.word != "":
		q = fmt.Sprintf("type %s to approve this one use, or [d]eny", shownWord(p.word))
	case p.card.OffersSession():
		q = "[s]ession, [o]nce, [d]eny"
		if len(p.card.Subjects) > 1 {
			q += ", or a subject number"
		}
	default:
		q = "[o]nce, [d]eny"
	}
	return fmt.Sprintf("card %s: %s? ", p.card.ID, q)
}

// reply is what a line of input decided.
type reply struct {
	verdict api.Verdict // 0: not decided yet
	subject int         // for a session: the subject's index, -1 for the card's choice
	note    string      // what to tell the person before asking again
	again   bool        // show the card again, and ask afresh
}

// read takes one line of input.
func (p *prompt) read(line string) reply {
	line = strings.TrimSpace(line)
	switch {
	case answerVerdict(line) == api.VerdictDeny:
		return reply{verdict: api.VerdictDeny, subject: -1}
	case line == "":
		return reply{again: p.tall}
	}
	if why := p.card.DenyOnly(); why != "" {
		return reply{note: "not approved: this card can only be denied: " + why}
	}
	if p.tall {
		return reply{note: "not approved: the card is taller than this terminal; make it taller and press Enter to see it whole"}
	}
	if p.word != "" {
		if line == p.word {
			return reply{verdict: api.VerdictOnce, subject: -1}
		}
		return reply{note: fmt.Sprintf("not approved: type %s exactly to approve this one use", shownWord(p.word))}
	}
	if n, err := strconv.Atoi(line); err == nil && p.card.OffersSession() && n >= 0 && n < len(p.card.Subjects) {
		p.subject = n
		return reply{note: fmt.Sprintf("subject: %s (pid %d)", shownName(p.card.Subjects[n].Name), p.card.Subjects[n].PID)}
	}
	switch answerVerdict(line) {
	case api.VerdictSession:
		if p.card.OffersSession() {
			return reply{verdict: api.VerdictSession, subject: p.subject}
		}
	case api.VerdictOnce:
		return reply{verdict: api.VerdictOnce, subject: -1}
	}
	return reply{note: "not an answer"}
}

// answerVerdict is what an answer word typed on a console does
// (inventory's answer words, declared there for the host names they
// keep out), or 0 for a word that is none.
func answerVerdict(word string) api.Verdict {
	switch {
	case slices.Contains(inventory.AnswersDeny, word):
		return api.VerdictDeny
	case slices.Contains(inventory.AnswersOnce, word):
		return api.VerdictOnce
	case slices.Contains(inventory.AnswersSession, word):
		return api.VerdictSession
	}
	return 0
}
