package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway"
	"github.com/postern/postern/internal/control"
)

const approveUsage = `Usage: postern approve [--socket PATH]
       postern approve --list [--json] [--socket PATH]
       postern approve ID [--once | --session] [--subject N] [--socket PATH]
       postern deny ID [--socket PATH]

Answer the gateway's approval cards. Without arguments, show each pending
card on the terminal as it arrives and ask. An answer from the requesting
process, the run, or a descendant of either is refused.
`

func cmdApprove(args []string, out, errw io.Writer) error {
	fs := newFlags("approve", approveUsage, errw)
	list := fs.Bool("list", false, "list the pending cards")
	asJSON := fs.Bool("json", false, "with --list, print JSON")
	once := fs.Bool("once", false, "approve this one use")
	session := fs.Bool("session", false, "approve the run until it exits")
	subject := fs.Int("subject", -1, "with --session, the subject's index on the card (default: the preselected one)")
	// Flags may follow the card id.
	id, args := leadingOperand(args)
	ctl, err := gatewayFlags(fs, args)
	if err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	switch {
	case *list:
		return listCards(ctl, out, *asJSON)
	case id == "":
		if *once || *session {
			return usagef("approve: --once and --session need a card id")
		}
		return approveInteractive(ctl, out)
	case *once && *session:
		return usagef("approve: choose --once or --session")
	}
	decision := "once"
	if *session {
		decision = "session"
	}
	if !*once && !*session {
		// The mode the card asks for.
		cards, err := fetchCards(ctl, false, 0)
		if err != nil {
			return err
		}
		for _, c := range cards.Cards {
			if c.ID == id && c.Mode == approvals.ModeSession {
				decision = "session"
			}
		}
	}
	return answer(ctl, out, id, decision, *subject)
}

func cmdDeny(args []string, out, errw io.Writer) error {
	fs := newFlags("deny", approveUsage, errw)
	id, args := leadingOperand(args)
	ctl, err := gatewayFlags(fs, args)
	if err != nil {
		return err
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	}
	if id == "" {
		return usagef("deny: name a card")
	}
	return answer(ctl, out, id, "deny", -1)
}

func answer(ctl string, out io.Writer, id, decision string, subject int) error {
	a := gateway.AnswerArgs{ID: id, Decision: decision}
	if subject >= 0 {
		a.Subject = &subject
	}
	if err := control.Call(ctl, "answer", a, nil, 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s\n", id, map[string]string{"once": "approved once", "session": "approved for the run", "deny": "denied"}[decision])
	return nil
}

func fetchCards(ctl string, wait bool, version uint64) (gateway.CardsResult, error) {
	var res gateway.CardsResult
	err := control.Call(ctl, "cards", gateway.CardsArgs{Wait: wait, Version: version, WaitFor: 50 * time.Second}, &res, 2*time.Minute)
	return res, err
}

func listCards(ctl string, out io.Writer, asJSON bool) error {
	res, err := fetchCards(ctl, false, 0)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, res.Cards)
	}
	if len(res.Cards) == 0 {
		fmt.Fprintln(out, "no pending cards")
	}
	for _, c := range res.Cards {
		fmt.Fprintf(out, "%s\n\n", c.Text())
	}
	return nil
}

// approveInteractive shows each pending card on the terminal and asks.
func approveInteractive(ctl string, out io.Writer) error {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return errors.New("approve: no terminal; use postern approve --list and postern approve ID")
	}
	defer tty.Close()
	in := bufio.NewReader(tty)
	seen := map[string]bool{}
	var version uint64
	fmt.Fprintln(tty, "waiting for approval cards (Ctrl-C to stop)")
	for {
		res, err := fetchCards(ctl, true, version)
		if err != nil {
			return err
		}
		version = res.Version
		for _, c := range res.Cards {
			if seen[c.ID] {
				continue
			}
			seen[c.ID] = true
			if err := askCard(ctl, tty, in, c); err != nil {
				fmt.Fprintf(tty, "postern: error: %v\n", err)
			}
		}
	}
}

func askCard(ctl string, tty io.Writer, in *bufio.Reader, c approvals.CardView) error {
	fmt.Fprintf(tty, "\n%s\n", c.Text())
	if len(c.Subjects) > 1 {
		fmt.Fprintln(tty, "Subjects a session approval could bind (the run it covers):")
		for i, s := range c.Subjects {
			mark := " "
			if i == c.Selected {
				mark = "*"
			}
			fmt.Fprintf(tty, "  %s %d. %s (pid %d) %s\n", mark, i, s.Name, s.PID, s.Exe)
		}
	}
	subject := c.Selected
	for {
		prompt := "[o]nce, [d]eny"
		if c.Mode == approvals.ModeSession {
			prompt = "[s]ession, [o]nce, [d]eny"
			if len(c.Subjects) > 1 {
				prompt += ", or a subject number"
			}
		}
		fmt.Fprintf(tty, "%s? ", prompt)
		line, err := in.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if n, err := strconv.Atoi(line); err == nil && n >= 0 && n < len(c.Subjects) {
			subject = n
			fmt.Fprintf(tty, "subject: %s (pid %d)\n", c.Subjects[n].Name, c.Subjects[n].PID)
			continue
		}
		switch line {
		case "s", "session":
			if c.Mode == approvals.ModeSession {
				return answer(ctl, tty, c.ID, "session", subject)
			}
		case "o", "once":
			return answer(ctl, tty, c.ID, "once", -1)
		case "d", "deny":
			return answer(ctl, tty, c.ID, "deny", -1)
		}
	}
}
