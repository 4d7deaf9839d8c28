package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/xdg"
)

// ensureAgent is "postern agent --ensure": the agent at the well-known
// socket (or -a SOCKET), reused when one serves it, started otherwise.
// It prints the eval lines, and echo lines that say where approval cards
// will appear.
func ensureAgent(f *agentFlags, out io.Writer) error {
	if f.socket == "" {
		wk, err := api.WellKnownSocket()
		if err != nil {
			return err
		}
		f.socket = wk
		if err := xdg.EnsureDir(filepath.Dir(wk)); err != nil {
			return fmt.Errorf("creating the socket directory: %w", err)
		}
	} else if abs, err := filepath.Abs(f.socket); err == nil {
		f.socket = abs
	}
	if !api.Serves(f.socket) {
		// A socket a service manager made: the connection starts the
		// agent.
		api.Activate(f.socket)
	}
	c := api.NewClient(f.socket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err == nil {
		evalLines(out, f, st.PID, true)
		echo(out, fmt.Sprintf("postern: reusing the agent (pid %d) at %s", st.PID, f.socket))
	} else {
		if err := startDetached(f, out); err != nil {
			return err
		}
		if st, err = c.Status(ctx); err != nil {
			// It started, and the lines that point the shell at it are
			// printed: the shell takes them. Only where cards will
			// appear is not known.
			echo(out, fmt.Sprintf("postern: warning: the agent started but did not answer its status (%v); \"postern doctor\" says what is wrong", err))
			return nil
		}
	}
	for _, line := range whereCards(st.Approvers) {
		echo(out, line)
	}
	return nil
}

// startDetached starts the agent in the background and prints its eval
// lines (detach); a variable for tests.
var startDetached = detach

// whereCards says, in a line or two, where approval cards will appear.
func whereCards(as []api.Approver) []string {
	var shown []string
	for _, a := range as {
		if a.Reachable && a.Name != "console" {
			shown = append(shown, approverLine(a))
		}
	}
	lines := []string{`postern: approval cards appear in "postern approve" (run it in another terminal)`}
	if len(shown) > 0 {
		lines = append(lines, "postern: and as "+strings.Join(shown, ", "))
	} else {
		lines = append(lines, `postern: no desktop notification service or askpass is reachable: without a "postern approve" console, a request that needs a card is refused at once (no_approver)`)
	}
	return lines
}

// echo prints a shell command that prints msg, rendered whole
// (safetext.Terminal: it can hold the name a notification service gives
// itself). printf, not echo: the echo of dash and zsh reads backslashes,
// and a rendered text holds them.
func echo(out io.Writer, msg string) {
	fmt.Fprintf(out, "printf '%%s\\n' %s;\n", shellQuote(safetext.Terminal(msg)))
}

// approverLine names an approver and says how it is reached. The
// detail can name a notification service, which names itself: it is
// escaped.
func approverLine(a api.Approver) string {
	return a.Name + " (" + safetext.Field(a.Detail, safetext.Line) + ")"
}
