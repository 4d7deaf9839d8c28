package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/postern/postern/internal/waitread"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/hugepages"
)

const approveUsage = `Usage: postern approve [--line | --json] [--socket PATH]
       postern approve --list [--json] [--socket PATH]
       postern approve ID [--once | --session] [--subject N] [--socket PATH]
       postern deny ID [--socket PATH]

Answer the gateway's approval cards. Without arguments, on a terminal, a
full-screen console: the pending cards, the live runs and grants
(revoke), and the commands whose outcome is unknown (resolve); with
--line, each card as it arrives, asked in turn. When standard input is
not a terminal, print each card as it arrives (--json: one JSON object a line)
and read answers from standard input, one a line: "once ID",
"session ID [N]" or "deny ID". While it runs, the gateway counts it as an
approver. An answer from the requesting process, the run, or a
descendant of either is refused.
`

// hardenApprover makes the approver non-dumpable: no other program of
// the user may read its memory or trace it into answering.
func hardenApprover() error {
	if err := harden.Apply(); err != nil {
		return fmt.Errorf("hardening the approver: %w", err)
	}
	return nil
}

func cmdApprove(args []string, out, errw io.Writer) error {
	if err := hardenApprover(); err != nil {
		return err
	}
	fs := newFlags("approve", approveUsage)
	list := fs.Bool("list", false, "list the pending cards")
	asJSON := fs.Bool("json", false, "with --list, print JSON")
	once := fs.Bool("once", false, "approve this one use")
	session := fs.Bool("session", false, "approve the run until it exits")
	subject := fs.Int("subject", -1, "with --session, the subject's index on the card (default: the preselected one)")
	line := fs.Bool("line", false, "on a terminal, ask card by card instead of the full-screen console")
	var id string
	c, err := gatewayFlags(fs, args, func() (err error) {
		if id, err = oneOperand(fs); err != nil {
			return err
		}
		switch {
		case *list && (id != "" || *once || *session || given(fs, "subject")):
			return usagef("approve: --list takes no card id, --once, --session or --subject")
		case *list:
		case id == "" && (*once || *session || given(fs, "subject")):
			return usagef("approve: --once, --session and --subject need a card id")
		case *once && *session:
			return usagef("approve: choose --once or --session")
		case given(fs, "subject") && *subject < 0:
			return usagef("approve: --subject takes a subject's index on the card, 0 or more")
		case given(fs, "subject") && *once:
			return usagef("approve: --subject chooses what a session binds: not for --once")
		}
		if err := approveOutputConflict(*list, *line, *asJSON, id, isTerminal(os.Stdin)); err != nil {
			return err
		}
		if !*list && id == "" {
			// The console, open for hours as the gateway: its memory
			// without the kernel's huge pages. This may start the
			// program again, so it comes before the gateway's client is
			// made, whose warnings would be printed twice.
			hugepages.Off()
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case *list:
		return listCards(c, out, *asJSON)
	case id == "":
		switch {
		case !isTerminal(os.Stdin):
			return approveLines(c, waitread.Reader(os.Stdin), out, errw, *asJSON)
		case *line || !isTerminal(os.Stdout) || os.Getenv("TERM") == "dumb":
			return approveInteractive(c, out)
		}
		return approveConsole(c)
	}
	decision := api.VerdictOnce
	if *session {
		decision = api.VerdictSession
	}
	if !*once && !*session {
		// The mode the card asks for.
		cards, err := c.Cards(context.Background())
		if err != nil {
			return err
		}
		for _, card := range cards.Cards {
			if card.ID == id && card.OffersSession() {
				decision = api.VerdictSession
			}
		}
	}
	return answer(c, out, id, decision, *subject)
}

// approveOutputConflict refuses --line and --json where they would be
// ignored: --line asks on a terminal, --json prints cards for a program
// (--list, or answers read from a standard input that is not a
// terminal), and neither goes with a card id.
func approveOutputConflict(list, line, asJSON bool, id string, stdinTerminal bool) error {
	switch {
	case line && (list || id != ""):
		return usagef("approve: --line is the console's, not for --list or a card id")
	case asJSON && id != "":
		return usagef("approve: --json is for --list or for answers read from standard input, not for a card id")
	case list || id != "":
	case line && !stdinTerminal:
		return usagef("approve: --line asks on a terminal, and standard input is not one")
	case asJSON && stdinTerminal:
		return usagef("approve: --json prints cards for a program that answers on standard input, and standard input is a terminal")
	}
	return nil
}

func cmdDeny(args []string, out, errw io.Writer) error {
	if err := hardenApprover(); err != nil {
		return err
	}
	fs := newFlags("deny", approveUsage)
	var id string
	c, err := gatewayFlags(fs, args, func() (err error) {
		if id, err = oneOperand(fs); err != nil {
			return err
		}
		if id == "" {
			return usagef("deny: name a card")
		}
		return nil
	})
	if err != nil {
		return err
	}
	return answer(c, out, id, api.VerdictDeny, -1)
}

// answered says what an answer did.
var answered = map[api.Verdict]string{
	api.VerdictOnce:    "approved once",
	api.VerdictSession: "approved for the run",
	api.VerdictDeny:    "denied",
}

func answer(c *api.Client, out io.Writer, id string, v api.Verdict, subject int) error {
	applied, err := c.Answer(context.Background(), id, v, subject)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s\n", id, answered[applied])
	return nil
}

func listCards(c *api.Client, out io.Writer, asJSON bool) error {
	res, err := c.Cards(context.Background())
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, nonNil(res.Cards))
	}
	printCards(out, res.Cards, termWidth(out))
	return nil
}

// printCards prints cards as text, each line wrapped to width (0: none):
// on a terminal that cuts long lines, or whose line wrapping a program
// turned off, a card is read whole all the same.
func printCards(out io.Writer, cards []api.Card, width int) {
	if len(cards) == 0 {
		fmt.Fprintln(out, "no pending cards")
	}
	for _, c := range cards {
		printCard(out, c, width)
	}
}

// printCard prints card c as text and an empty line, wrapped to width.
func printCard(out io.Writer, c api.Card, width int) {
	fmt.Fprintf(out, "%s\n\n", wrap(c.Text(), width))
}

// approveInteractive shows each pending card on the terminal and asks,
// by the rules of prompt.go: in turn, each card still pending when its
// turn comes.
func approveInteractive(c *api.Client, out io.Writer) error {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return withHint(errors.New("approve: no terminal to ask on"), `"postern approve --list" shows the cards, "postern approve ID" answers one`)
	}
	defer tty.Close()
	in := bufio.NewReader(tty)
	seen := map[string]bool{}
	fmt.Fprintln(tty, "waiting for approval cards (Ctrl-C to stop)")
	w := &cardWatcher{c: c, say: func(msg string) { fmt.Fprintln(tty, msg) }}
	for {
		cards, err := w.next(context.Background())
		if err != nil {
			return err
		}
		// The ids of the cards asked about that are still pending: an
		// id is never another card's.
		live := make(map[string]bool, len(cards))
		for _, card := range cards {
			live[card.ID] = true
		}
		maps.DeleteFunc(seen, func(id string, _ bool) bool { return !live[id] })
		for _, card := range cards {
			// A card that went away while another was asked about
			// (answered elsewhere, timed out, withdrawn) is not asked.
			if seen[card.ID] || !w.pending(card.ID) {
				continue
			}
			seen[card.ID] = true
			gone := func() bool { return !w.pending(card.ID) }
			if err := askCard(c, tty, in, card, gone); err != nil {
				errorf(tty, "card %s: %v", card.ID, err)
			}
		}
	}
}

// errCardGone says that a card is no longer pending.
var errCardGone = errors.New("no longer pending (answered elsewhere, timed out, or withdrawn)")

// askCard shows one card and reads answers until one decides it, or
// until gone reports that the card went away; an answer the gateway did
// not apply shows the card again. A card taller than the terminal, whose
// top went off the screen before the question, can only be denied until
// it is shown again in a terminal tall enough, as on the full-screen
// console. Keys typed before the card was shown are discarded, and so is
// what is left after the answer, whatever happened to it.
func askCard(gw *api.Client, tty *os.File, in *bufio.Reader, c api.Card, gone func() bool) error {
	defer discardInput(tty, in)
	discardInput(tty, in)
	var width int
	var p *prompt
	// show shows the card and asks afresh once it was read.
	show := func() {
		width = termWidth(tty)
		shown := lineCard(c, width)
		fmt.Fprint(tty, shown)
		settle(tty, in)
		p = newPrompt(c)
		_, rows, err := term.GetSize(int(tty.Fd()))
		p.tall = err == nil && rows > 0 && tallerThan(c, p, width, rows)
	}
	show()
	for {
		fmt.Fprint(tty, wrap(p.question(), width))
		line, err := readAnswer(tty, in, gone)
		if err != nil {
			return err
		}
		r := p.read(line)
		if r.note != "" {
			fmt.Fprintln(tty, wrap(r.note, width))
		}
		if r.again {
			show()
			continue
		}
		if r.verdict == 0 {
			continue
		}
		err = answer(gw, tty, c.ID, r.verdict, r.subject)
		switch {
		case err == nil:
			return nil
		case api.HasCode(err, api.CodeNotFound):
			return errCardGone
		}
		// Not applied (refused, or the gateway could not be reached),
		// and the card is still pending: it is asked again, afresh, as
		// the full-screen console does, so that the person can still
		// answer it here (a policy change card, which does not time
		// out, can then be denied).
		errorf(tty, "card %s: %v", c.ID, err)
		if gone() {
			return errCardGone
		}
		discardInput(tty, in)
		show()
	}
}

// lineCard is what the line console shows of card c before it asks,
// wrapped to width: the runs a session could bind, when there are
// several, then the card. The card comes last, next to the question: the
// list, as long as the requester's chain of ancestors (up to 65 runs,
// each named as the requester chose), never pushes the card's question
// (the key, the destination) off the screen, nor fills the screen above
// the question with names a requester chose.
func lineCard(c api.Card, width int) string {
	var b strings.Builder
	if len(c.Subjects) > 1 && c.OffersSession() {
		b.WriteString("\nSubjects a session approval could bind (the run it covers), marked on the card below:\n")
		for i, s := range c.Subjects {
			mark := " "
			if i == c.Selected {
				mark = "*"
			}
			b.WriteString(wrap(fmt.Sprintf("  %s %d. %s", mark, i, subjectText(s.Name, s.PID, s.Exe)), width) + "\n")
		}
	}
	b.WriteString("\n" + wrap(c.Text(), width) + "\n")
	return b.String()
}

// tallerThan reports whether card c, shown by lineCard in width columns,
// and its question p lose the card's top in a terminal of rows lines.
// The runs a session could bind, listed above the card, may go off the
// screen: the card names the marked one, and a number marks another.
func tallerThan(c api.Card, p *prompt, width, rows int) bool {
	return lineCount("\n"+wrap(c.Text(), width)+"\n")+lineCount(wrap(p.question(), width)) > rows
}

// goneEvery is how often a console waiting for a line checks that the
// card it asks about is still pending.
const goneEvery = 250 * time.Millisecond

// readAnswer reads a line typed on tty, or returns errCardGone once gone
// reports, while no line was typed, that the card went away.
func readAnswer(tty *os.File, in *bufio.Reader, gone func() bool) (string, error) {
	for in.Buffered() == 0 && !lineTyped(tty, goneEvery) {
		if gone() {
			return "", errCardGone
		}
	}
	return in.ReadString('\n')
}

// lineTyped waits up to d for input on tty (in canonical mode, a whole
// line) and reports whether there is some, or an error that reading
// will return.
func lineTyped(tty *os.File, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(tty.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(d.Milliseconds()))
	return err == nil && n > 0 || err != nil && err != unix.EINTR
}

// settle waits, once a card is shown, until no line has been typed on
// the terminal for armDelay, discarding each line typed before that, and
// then what is left of a line: a program that types answers into the
// terminal without a pause never answers a card, and a person reads the
// card before the question comes.
func settle(tty *os.File, in *bufio.Reader) {
	for {
		discardInput(tty, in)
		time.Sleep(armDelay)
		if pendingInput(tty) == 0 {
			discardInput(tty, in)
			return
		}
	}
}

// discardInput drops what was typed and not yet read: in the terminal's
// input queue (TCFLSH) and in the reader's buffer.
func discardInput(tty *os.File, in *bufio.Reader) {
	flushInput(tty)
	in.Reset(tty)
}
