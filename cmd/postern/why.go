package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
)

const whyUsage = `Usage: postern why [--json] [--socket PATH]

Say what the gateway last decided for this process or its run: allowed,
waiting on a card, denied and why, REAUTH_REQUIRED with what changed, or
STATUS_UNKNOWN inspect_activity_journal with the journal entry. Inside a
run it shows that run only. It asks over the agent socket
($SSH_AUTH_SOCK), so it works inside a confined run.

For AI agents: when ssh or git fails, run "postern why" and report what
it says to your user; do not retry on your own.
`

func cmdWhy(args []string, out, errw io.Writer) error {
	fs := newFlags("why", whyUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := askWhy(ctx, *sock, errw)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(out, res)
	}
	printWhy(out, res)
	return nil
}

// printWhy renders a why answer for a person. The requesting chain names
// processes by the names their executables were given: escaped
// (safetext).
func printWhy(out io.Writer, res *api.WhyResult) {
	if res.AuditFailing != "" {
		fmt.Fprintf(out, "the audit log cannot be written since %s (%s): every action is refused until it can (\"postern status\")\n",
			res.AuditFailingSince, safetext.Field(res.AuditFailing, safetext.Line))
	}
	w := res.Last
	if w == nil {
		what := "this process"
		if res.Run != "" {
			what = "run " + res.Run
		}
		fmt.Fprintf(out, "no decision recorded for %s since the gateway started", what)
		switch {
		case res.VaultLocked && res.Run != "":
			// A run cannot unlock: postern unlock is refused there.
			fmt.Fprint(out, " (the vault is locked: ask your user to run \"postern unlock\")")
		case res.VaultLocked:
			fmt.Fprint(out, " (the vault is locked: run \"postern unlock\")")
		}
		fmt.Fprintln(out)
		return
	}
	fmt.Fprintf(out, "%s\n", w.Outcome)
	fmt.Fprintf(out, "  %s\n", safetext.Field(w.Explain, safetext.Line))
	if w.Because != "" {
		// The policy's words, as postern check gives them.
		fmt.Fprintf(out, "  because:     %s\n", safetext.Field(w.Because, safetext.Line))
	}
	fmt.Fprintf(out, "  when:        %s\n", w.Time.Local().Format(timeLayout))
	if w.Requester != "" {
		// Rendered by the gateway as a card's chain: its escapes stay.
		fmt.Fprintf(out, "  requested by %s\n", safetext.Terminal(w.Requester))
	}
	if w.Run != "" {
		fmt.Fprintf(out, "  run:         %s\n", w.Run)
	}
	if w.Key != "" {
		// The comment is the adder's: a run may add a key of its own.
		fmt.Fprintf(out, "  key:         %s\n", safetext.Field(w.Key, safetext.Line))
	}
	if w.Destination != "" {
		// Named as its card named it, by the host inventory.
		fmt.Fprintf(out, "  destination: host key %s (verified)%s\n", safetext.Field(w.Destination, safetext.Line), inventoryNames(w.DestinationNames, w.DestinationClasses))
	}
	if w.Namespace != "" {
		// The signer's: quoted, as a card shows it.
		fmt.Fprintf(out, "  namespace:   %s\n", safetext.Quote(w.Namespace, 0))
	}
	if w.Card != "" {
		fmt.Fprintf(out, "  card:        %s\n", w.Card)
	}
	if w.Journal != "" {
		fmt.Fprintf(out, "  journal:     %s\n", w.Journal)
	}
	fmt.Fprintf(out, "next: %s\n", w.Next)
}

// askWhy asks the gateway at the agent socket sock, or $SSH_AUTH_SOCK,
// or the well-known socket when $SSH_AUTH_SOCK is unset or not postern's.
func askWhy(ctx context.Context, sock string, errw io.Writer) (*api.WhyResult, error) {
	if sock != "" {
		return api.AskWhy(ctx, sock)
	}
	env := os.Getenv("SSH_AUTH_SOCK")
	if env != "" {
		res, err := api.AskWhy(ctx, env)
		if err == nil || !(errors.Is(err, api.ErrNotPostern) || errors.Is(err, api.ErrNoGateway)) {
			return res, err
		}
		wk, werr := api.WellKnownSocket()
		if werr != nil || wk == env {
			return nil, err
		}
		warningf(errw, "$SSH_AUTH_SOCK (%s): %v; asking the well-known socket %s", env, err, wk)
	}
	wk, err := api.WellKnownSocket()
	if err != nil {
		return nil, err
	}
	res, err := api.AskWhy(ctx, wk)
	if env == "" && errors.Is(err, api.ErrNoGateway) {
		// As the other commands say it.
		return nil, api.NoGatewayUnset(wk)
	}
	return res, err
}

// inventoryNames says what the host inventory called a destination, after
// its fingerprint: ", prod-db-1 (production)", or "" for no name.
func inventoryNames(names, classes []string) string {
	if len(names) == 0 {
		return ""
	}
	s := ", " + strings.Join(safetext.Tokens(names, safetext.Name), ", ")
	if len(classes) > 0 {
		s += " (" + strings.Join(safetext.Tokens(classes, safetext.Name), ", ") + ")"
	}
	return s
}
