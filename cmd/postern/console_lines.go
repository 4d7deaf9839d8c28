package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	var mu sync.Mutex // one writer at a time
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			msg, err := lineAnswer(c, line)
			mu.Lock()
			if err != nil {
				report(out, errw, "approve", err)
			} else {
				fmt.Fprintln(out, msg)
			}
			mu.Unlock()
		}
	}()
	shown := map[string]bool{}
	w := &cardWatcher{c: c, say: func(msg string) {
		mu.Lock()
		fmt.Fprintln(errw, msg)
		mu.Unlock()
	}}
	w.each(context.Background(), func(cards []api.Card) {
		now := map[string]bool{}
		mu.Lock()
		defer mu.Unlock()
		for _, card := range cards {
			now[card.ID] = true
			if shown[card.ID] {
				continue
			}
			shown[card.ID] = true
			if asJSON {
				b, _ := json.Marshal(card)
				fmt.Fprintf(out, "%s\n", b)
			} else {
				fmt.Fprintf(out, "%s\n\n", card.Text())
			}
		}
		for id := range shown {
			if !now[id] {
				delete(shown, id)
				if !asJSON {
					fmt.Fprintf(out, "%s: closed\n", id)
				}
			}
		}
	})
	return nil
}

// lineAnswer applies one answer line and says what it did.
func lineAnswer(c *api.Client, line string) (string, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", usagef(`approve: want "once ID", "session ID [N]" or "deny ID", not %q`, line)
	}
	subject := -1
	var v api.Verdict
	switch f[0] {
	case "once", "o":
		v = api.VerdictOnce
	case "session", "s":
		v = api.VerdictSession
		if len(f) == 3 {
			n, err := strconv.Atoi(f[2])
			if err != nil || n < 0 {
				return "", usagef("approve: subject %q is not a number", f[2])
			}
			subject = n
		}
	case "deny", "d":
		v = api.VerdictDeny
	default:
		return "", usagef(`approve: want "once ID", "session ID [N]" or "deny ID", not %q`, line)
	}
	if err := c.Answer(context.Background(), f[1], v, subject); err != nil {
		return "", err
	}
	return f[1] + ": " + answered[v], nil
}
