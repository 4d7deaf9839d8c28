package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/safetext"
)

const sessionsUsage = `Usage: postern sessions [--json] [--socket PATH]
       postern sessions --history [--json] [--offline] [--passphrase-file FILE]
       postern revoke GRANT|RUN|--all [--socket PATH]

List the live runs and session grants, or every session the audit log
shows (who was approved, with which evidence, why it ended), or end grants
now.
`

func cmdSessions(args []string, out, errw io.Writer) error {
	fs := newFlags("sessions", sessionsUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	history := fs.Bool("history", false, "list every session in the audit log")
	pfile := passphraseFileFlag(fs)
	offline := offlineFlag(fs)
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	if err := onlyWith(fs, "history", "offline", "passphrase-file"); err != nil {
		return err
	}
	if err := exclusive(fs, "history", "socket"); err != nil {
		return err
	}
	if *history {
		return sessionsHistory(out, *pfile, *offline, *asJSON)
	}
	c, err := gatewayClient(*sock)
	if err != nil {
		return err
	}
	res, err := c.Sessions(context.Background())
	if err != nil {
		return err
	}
	if *asJSON {
		res.Runs, res.Grants = nonNil(res.Runs), nonNil(res.Grants)
		return printJSON(out, res)
	}
	printSessions(out, res)
	return nil
}

// printSessions lists the live runs and grants for a person: a run's
// name and label, and a destination's names, quoted where they hold a
// space, a parenthesis, a comma or an arrow, so that none reads as
// another run, a pid or two names.
func printSessions(out io.Writer, res *api.SessionsResult) {
	if len(res.Runs) == 0 {
		fmt.Fprintln(out, "no runs")
	}
	for _, r := range res.Runs {
		how := "approved subject"
		if r.Launched {
			how = "postern run"
		}
		fmt.Fprintf(out, "run %s  %s  via %s, %s", r.ID, runProcess(r, true), how, plural(r.Grants, "grant"))
		if r.Label != "" {
			fmt.Fprintf(out, ", label %s", shownName(r.Label))
		}
		if r.Restored != "" {
			fmt.Fprint(out, ", registered before the gateway restarted")
			if r.Grants == 0 {
				fmt.Fprint(out, ": needs approval again")
			}
		}
		fmt.Fprint(out, noCards(r), runConfinement(r))
		fmt.Fprintln(out)
		if len(r.Argv) > 0 {
			fmt.Fprintf(out, "    command (its claim): %s\n", safetext.Field(strings.Join(r.Argv, " "), safetext.Command))
		}
	}
	for _, g := range res.Grants {
		fmt.Fprintf(out, "grant %s  run %s  key %s%s", g.ID, g.Run, g.Key.Fingerprint, grantScope(&g))
		fmt.Fprintf(out, "  since %s by %s", g.Approved.Local().Format(timeLayout), safetext.Field(g.Approver, safetext.Line))
		if !g.Expires.IsZero() {
			fmt.Fprintf(out, ", until %s (session_lifetime)", g.Expires.Local().Format(timeLayout))
		}
		fmt.Fprintln(out)
	}
}

// grantScope says what a grant scoped under session_scope =
// "destination" covers: the host it was approved for, or the namespace
// of its signatures, quoted whole as its card showed it (two that differ
// past a cut would read as one), or nothing, when its card was for a
// login to no verified host; "" for a grant that covers the key's every
// use.
func grantScope(g *api.Grant) string {
	if g.Scoped && g.Dest == "" && g.Namespace == "" {
		return "  to no verified host: covers nothing"
	}
	return scopeText(g.Dest, g.DestNames, g.Namespace)
}

// scopeText is grantScope for a grant approved for the host key dest
// (with its inventory names) or for signatures in namespace ns, live or
// as the audit log tells it. Each is escaped: an entry after the log's
// last checkpoint may be anyone's.
func scopeText(dest string, names []string, ns string) string {
	switch {
	case dest != "":
		return fmt.Sprintf("  to %s %s", shown(dest), strings.Join(safetext.Tokens(names, safetext.Name), ","))
	case ns != "":
		return "  namespace " + safetext.Quote(ns, 0)
	}
	return ""
}

// runProcess names a run's process in a list of runs: its name and pid,
// and with exe its executable, or "starting" while the run has none yet
// (prepared by postern run, its command not yet reported).
func runProcess(r api.RunState, exe bool) string {
	if r.Pending {
		return "starting"
	}
	s := fmt.Sprintf("%s (pid %d)", shownName(r.Name), r.PID)
	if exe {
		s += " " + safetext.Field(r.Exe, safetext.Path)
	}
	return s
}

// runConfinement ends a run's line in a list of runs with how it is
// confined, as its cards say it ("unconfined" for a run started with
// --no-sandbox or chosen among a requester's ancestors); "" for a run not
// yet started.
func runConfinement(r api.RunState) string {
	if r.Pending {
		return ""
	}
	c := r.Confinement
	if c == "" {
		c = confine.Level{}.String()
	}
	return "; " + safetext.Field(c, safetext.Line)
}

// noCards says, for a run in its cooldown, until when its requests are
// refused without a card; "" otherwise.
func noCards(r api.RunState) string {
	if r.NoCardsUntil.IsZero() {
		return ""
	}
	return ", refused without a card until " + r.NoCardsUntil.Local().Format("15:04:05") + " (card_cooldown)"
}

func cmdRevoke(args []string, out, errw io.Writer) error {
	fs := newFlags("revoke", sessionsUsage)
	all := fs.Bool("all", false, "revoke every grant")
	var target string
	c, err := gatewayFlags(fs, args, func() (err error) {
		if target, err = oneOperand(fs); err != nil {
			return err
		}
		if (target == "") == !*all {
			return usagef("revoke: name a grant, a run, or --all")
		}
		return nil
	})
	if err != nil {
		return err
	}
	var n int
	if *all {
		n, err = c.RevokeAll(context.Background())
	} else {
		n, err = c.Revoke(context.Background(), target)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "revoked %s\n", plural(n, "grant"))
	return nil
}
