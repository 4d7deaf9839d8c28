package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/postern/postern/gateway/api"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// approveLines is the console for scripts and pipes: each new card is
// printed to out as it arrives (a text block, or one JSON object a line),
// each card that goes away is reported, and answers are read from in,
// one a line ("once ID", "session ID [N]", "deny ID"). The end of in
// stops the answers, not the watching.
func approveLines(c *api.Client, in io.Reader, out, errw io.Writer, asJSON bool) error {
	var mu sync.Mutex // one writer at a time, and p's
	p := &linePrinter{out: out, errw: errw, asJSON: asJSON, width: termWidth(out), shown: map[string]bool{}}
	go func() {
		r := bufio.NewReaderSize(in, maxAnswerLine)
		for {
			line, err := answerLine(r)
			if err != nil && !errors.Is(err, errLongAnswer) {
				return
			}
			msg, id := "", ""
			if err == nil {
				if line == "" {
					continue
				}
				id = answerID(line)
				mu.Lock()
				p.answering(id)
				mu.Unlock()
				msg, err = lineAnswer(c, line)
			}
			mu.Lock()
			switch {
			case err != nil:
				report(out, errw, "approve", err)
			case asJSON:
				// Standard output holds the cards alone, one JSON object
				// a line.
				fmt.Fprintln(errw, msg)
			default:
				fmt.Fprintln(out, msg)
			}
			p.answered(id)
			mu.Unlock()
		}
	}()
	w := &cardWatcher{c: c, say: func(msg string) {
		mu.Lock()
		fmt.Fprintln(errw, msg)
		mu.Unlock()
	}}
	w.changes(context.Background(), func(d *api.CardsDelta) {
		mu.Lock()
		p.show(d)
		mu.Unlock()
	})
	return nil
}

// maxAnswerLine bounds an answer line, in bytes: "session ID N" takes
// a few dozen.
const maxAnswerLine = 4096

// errLongAnswer is what a line longer than maxAnswerLine answers.
var errLongAnswer = usagef("approve: an answer line longer than %d bytes, skipped", maxAnswerLine)

// answerLine reads one line of r, trimmed. A line longer than r's
// buffer (maxAnswerLine) is read past, so that the answers after it are
// read all the same, and answers errLongAnswer. It returns another
// error at the end of r.
func answerLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.ReadSlice('\n')
		}
		return "", errLongAnswer
	}
	if len(b) == 0 && err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// linePrinter prints the changes of the pending cards for the line
// console: each card when it first comes (a text block, wrapped to the
// terminal's width, or one JSON object a line) and "ID: closed" when a
// card shown goes away (with the cards, or, when they are JSON, on errw,
// where what an answer did is said too: standard output holds the cards
// alone). It works from the changes alone, not from a copy of every
// pending card after each. A card that goes away while an answer to it
// is on its way is said to be closed once what the answer did is said,
// after it, whichever of the gateway's two words came first.
type linePrinter struct {
	out    io.Writer
	errw   io.Writer // where a JSON console says that a card went away
	asJSON bool
	width  int             // out's width, when it is a terminal: text is wrapped to it
	shown  map[string]bool // the cards printed and still pending
	// closing holds the cards an answer is on its way to, true once
	// such a card went away: its "closed" waits for the answer's word.
	closing map[string]bool
}

// answering notes that an answer to card id is on its way.
func (p *linePrinter) answering(id string) {
	if p.closing == nil {
		p.closing = map[string]bool{}
	}
	if _, ok := p.closing[id]; !ok {
		p.closing[id] = false
	}
}

// answered notes that what the answer to card id did was said, and says
// that the card went away if it did meanwhile.
func (p *linePrinter) answered(id string) {
	gone, ok := p.closing[id]
	if !ok {
		return
	}
	delete(p.closing, id)
	if gone {
		p.closed(id)
	}
}

// closed says that card id went away.
func (p *linePrinter) closed(id string) {
	w := p.out
	if p.asJSON {
		w = p.errw
	}
	fmt.Fprintf(w, "%s: closed\n", id)
}

// show prints change d.
func (p *linePrinter) show(d *api.CardsDelta) {
	gone := d.Gone
	if d.Reset {
		// A snapshot: the cards shown that it lacks went away.
		pending := make(map[string]bool, len(d.Cards))
		for _, card := range d.Cards {
			pending[card.ID] = true
		}
		gone = nil
		for id := range p.shown {
			if !pending[id] {
				gone = append(gone, id)
			}
		}
		slices.Sort(gone)
	}
	for _, card := range d.Cards {
		if p.shown[card.ID] {
			continue
		}
		p.shown[card.ID] = true
		if p.asJSON {
			b, _ := json.Marshal(card)
			fmt.Fprintf(p.out, "%s\n", b)
		} else {
			printCard(p.out, card, p.width)
		}
	}
	for _, id := range gone {
		if !p.shown[id] {
			continue
		}
		delete(p.shown, id)
		if _, ok := p.closing[id]; ok {
			p.closing[id] = true
			continue
		}
		p.closed(id)
	}
}

// answerID is the card an answer line names ("" when it names none).
func answerID(line string) string {
	if f := strings.Fields(line); len(f) >= 2 {
		return f[1]
	}
	return ""
}

// lineAnswer applies one answer line and says what it did.
func lineAnswer(c *api.Client, line string) (string, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", usagef(`approve: want "once ID", "session ID [N]" or "deny ID", not %q`, line)
	}
	subject := -1
	v := answerVerdict(f[0])
	switch v {
	case api.VerdictOnce:
	case api.VerdictSession:
		if len(f) == 3 {
			n, err := strconv.Atoi(f[2])
			if err != nil || n < 0 {
				return "", usagef("approve: subject %q is not a number", f[2])
			}
			subject = n
		}
	case api.VerdictDeny:
	default:
		return "", usagef(`approve: want "once ID", "session ID [N]" or "deny ID", not %q`, line)
	}
	applied, err := c.Answer(context.Background(), f[1], v, subject)
	if err != nil {
		return "", err
	}
	return f[1] + ": " + answered[applied], nil
}
