package main

// How the full-screen console runs: the program on the terminal, and
// beside it what follows the gateway's cards and sends them to it.

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/gateway/api"
)

// approveConsole runs the full-screen console until q or Ctrl-C.
func approveConsole(gw *api.Client) error {
	m := newConsoleModel(gw, func() { discardTypeahead(os.Stdin) })
	p := tea.NewProgram(m)
	defer quitOnSignals(p)()
	return runConsole(p, func(ctx context.Context) {
		w := &cardWatcher{c: gw, say: func(s string) { p.Send(connMsg{strings.TrimPrefix(s, "postern: "), true}) }}
		for {
			cards, err := w.next(ctx)
			if err != nil {
				return
			}
			p.Send(connMsg{text: fmt.Sprintf("connected to the gateway (boot id %.8s…)", w.boot)})
			p.Send(cardsMsg(cards))
		}
	})
}

// runConsole runs console p until it ends, and follow, which sends it
// the cards, beside it until then. A panic in follow ends the console,
// its terminal restored, with an error that says what failed: left to
// end the program, it would leave the terminal raw.
func runConsole(p *tea.Program, follow func(ctx context.Context)) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				failed <- fmt.Errorf("approve: the console's follower of the cards failed: %v\n%s", r, debug.Stack())
				p.Quit()
			}
		}()
		follow(ctx)
	}()
	_, err := p.Run()
	select {
	case err = <-failed:
	default:
	}
	return err
}
