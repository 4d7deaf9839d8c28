package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
)

const journalUsage = `Usage: postern journal [list] [--status STATUS] [--limit N] [--json]
       postern journal show ID [--json]
       postern journal resolve ID [--ran STATUS | --not-started | --still-running | --inconclusive] [--evidence TEXT]
       postern journal follow [--json]
       postern journal new

The bastion's command journal: what is known of every remote command it
relayed. A status is COMPLETED, RETRY_SAFE previous_action_not_started,
STATUS_UNKNOWN inspect_activity_journal, or RUNNING. resolve reads the
remote markers of an unknown entry over a fresh connection, or records
what you found out (--ran, --not-started, ...). follow prints the
commands still running, then every change as the gateway makes it. list
and show read the journal file itself when no gateway runs, or one runs
without its bastion; resolve, follow and new need the running gateway,
which records every resolution in the audit log.
A damaged journal is kept as it is and the bastion refuses commands
until you decide: new keeps the damaged file aside and starts a new
journal (the retry guards of its unknown commands are gone with it).
--socket PATH names the gateway's agent socket (default $SSH_AUTH_SOCK,
else the well-known one).
`

// journalReader answers journal queries: the running gateway, or the
// journal file when none runs.
type journalReader interface {
	api.JournalSource
	JournalEntry(ctx context.Context, id string) (*api.JournalEntry, error)
}

// openJournal returns the gateway when one answers with its bastion
// enabled, else the journal file (which a gateway without its bastion
// does not hold open), and a function that closes it.
func openJournal(sockFlag string) (journalReader, func(), error) {
	if c, st := answeringGateway(sockFlag); c != nil && st.Bastion != nil {
		return c, func() {}, nil
	}
	f, err := api.OpenJournalFile()
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func cmdJournal(args []string, out, errw io.Writer) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	if !slices.Contains([]string{"list", "show", "resolve", "follow", "new"}, sub) {
		return usagef("journal: unknown subcommand %q", sub)
	}
	// Each subcommand has only its own flags: another's is refused, not
	// taken and ignored.
	fs := newFlags("journal "+sub, journalUsage)
	var (
		asJSON, notStarted, stillRunning, inconclusive bool
		status, evidence                               string
		limit, ran                                     = 50, -1
	)
	switch sub {
	case "list":
		fs.StringVar(&status, "status", "", "only entries with this status (its first word is enough)")
		fs.IntVar(&limit, "limit", limit, "at most this many entries")
		fallthrough
	case "show", "follow":
		fs.BoolVar(&asJSON, "json", false, "print JSON")
	case "resolve":
		fs.IntVar(&ran, "ran", ran, "the command ran and exited with this status")
		fs.BoolVar(&notStarted, "not-started", false, "the command never started")
		fs.BoolVar(&stillRunning, "still-running", false, "the command is still running")
		fs.BoolVar(&inconclusive, "inconclusive", false, "what you found does not tell")
		fs.StringVar(&evidence, "evidence", "", "what you checked")
	}
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	id, err := oneOperand(fs)
	if err != nil {
		return err
	}
	if id != "" && (sub == "list" || sub == "follow" || sub == "new") {
		return usagef("journal %s: unexpected argument %q", sub, id)
	}
	if id == "" && (sub == "show" || sub == "resolve") {
		return usagef("journal %s: name an entry", sub)
	}
	if limit < 0 {
		return usagef("journal %s: --limit takes a number of entries, 0 for all", sub)
	}
	if _, ok := api.ParseJournalStatus(status); status != "" && !ok {
		return usagef("journal %s: --status: %s is none of RUNNING, COMPLETED, RETRY_SAFE or STATUS_UNKNOWN (its first word is enough)", sub, safetext.Quote(status, safetext.Name))
	}
	switch sub {
	case "follow":
		c, err := gatewayClient(*sock)
		if err != nil {
			return err
		}
		return followJournal(c, out, asJSON)
	case "new":
		c, err := gatewayClient(*sock)
		if err != nil {
			return err
		}
		res, err := c.NewJournal(context.Background())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "started a new command journal; the damaged one is kept at %s\n", res.KeptAt)
		return nil
	case "list", "show":
		src, closeSrc, err := openJournal(*sock)
		if err != nil {
			return err
		}
		defer closeSrc()
		ctx := context.Background()
		switch sub {
		case "list":
			return listJournal(ctx, src, out, status, limit, asJSON)
		case "show":
			e, err := src.JournalEntry(ctx, id)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(out, e)
			}
			printEntry(out, e)
		}
		return nil
	case "resolve":
		a := api.ResolveArgs{ID: id, Evidence: evidence}
		n := 0
		if given(fs, "ran") && (ran < 0 || ran > 255) {
			return usagef("journal resolve: --ran takes an exit status, 0 to 255")
		}
		if ran >= 0 {
			a.Result, a.ExitStatus, n = api.ResultRan, &ran, n+1
		}
		for _, f := range []struct {
			set    bool
			result string
		}{{notStarted, api.ResultNotStarted}, {stillRunning, api.ResultStillRunning}, {inconclusive, api.ResultInconclusive}} {
			if f.set {
				a.Result, n = f.result, n+1
			}
		}
		if n > 1 {
			return usagef("journal resolve: give one of --ran, --not-started, --still-running, --inconclusive")
		}
		if n == 0 && given(fs, "evidence") {
			// A probe records what the markers show, not a person's words.
			return usagef("journal resolve: --evidence goes with what it shows: --ran, --not-started, --still-running or --inconclusive")
		}
		// Only the gateway writes the journal, and the audit event with
		// each resolution.
		c, err := gatewayClient(*sock)
		var e *api.JournalEntry
		if err == nil {
			e, err = c.Resolve(context.Background(), a)
		}
		if errors.Is(err, api.ErrNoGateway) {
			return fmt.Errorf("resolving needs the running gateway, which records the resolution in the audit log: %w", err)
		}
		if err != nil {
			return err
		}
		printEntry(out, e)
		return nil
	}
	return usagef("journal: unknown subcommand %q", sub)
}

// targetText is user@host:port with each part escaped and cut on its own,
// so that a long user name (the client's claim) cannot push the host out
// of sight; a user name holding "@" or ":" is quoted.
func targetText(e *api.JournalEntry) string {
	user := shown(e.Target.User)
	if strings.ContainsAny(e.Target.User, "@:") {
		user = safetext.Quote(e.Target.User, safetext.Name)
	}
	return user + "@" + shown(e.Target.Host) + ":" + strconv.Itoa(e.Target.Port)
}

// entryLine is an entry on one line: its id, status, how it ended, when
// it started, where it went, and what ran there, named by the kind of
// session first (exec, shell, subsystem), so that a command never reads
// as a subsystem or a shell.
func entryLine(e *api.JournalEntry) string {
	what := e.Kind
	if len(e.Command) > 0 {
		what += " " + safetext.Field(string(e.Command), safetext.Command)
	}
	return fmt.Sprintf("%s  %-41s  %-9s  %s  %s %s", e.ID, e.Status(), exitText(e), e.Started.Local().Format(timeLayout), targetText(e), what)
}

// exitText is how an entry ended, in a word or two: "exit 0",
// "signal TERM", the outcome when no status came, "-" when none is known.
func exitText(e *api.JournalEntry) string {
	// A resolution speaks for an outcome no one saw.
	if n := len(e.Resolutions); n > 0 && e.Resolutions[n-1].ExitStatus != nil {
		return fmt.Sprintf("exit %d", *e.Resolutions[n-1].ExitStatus)
	}
	switch x := e.End; {
	case x != nil && x.Signal != "":
		return "signal " + shown(x.Signal)
	case x != nil && x.Outcome == api.OutcomeExited:
		return fmt.Sprintf("exit %d", x.ExitStatus)
	case x != nil:
		return x.Outcome
	}
	return "-"
}

func printEntry(out io.Writer, e *api.JournalEntry) {
	fmt.Fprintf(out, "entry     %s\nstatus    %s\n", e.ID, e.Status())
	// The approval and the host key are free text in the journal's file,
	// which any program of the user can rewrite while no gateway runs.
	fmt.Fprintf(out, "target    %s (host key %s)\n", targetText(e), safetext.Field(e.Target.HostKey, safetext.Line))
	fmt.Fprintf(out, "command   %s %s (sha256 %s)\n", e.Kind, safetext.Escape(string(e.Command)), e.CommandSHA256)
	fmt.Fprintf(out, "requester %s\n", safetext.Field(e.Requester, safetext.Line))
	fmt.Fprintf(out, "approval  %s\n", safetext.Field(e.Approval, safetext.Line))
	fmt.Fprintf(out, "started   %s", e.Started.Local().Format(time.RFC3339))
	if !e.Dispatched.IsZero() {
		fmt.Fprintf(out, ", dispatched %s", e.Dispatched.Local().Format(time.RFC3339))
	}
	fmt.Fprintln(out)
	switch {
	case e.Marker && e.Status() == api.JournalStatusUnknown:
		fmt.Fprintln(out, "markers   on: postern journal resolve can read them")
	case e.Marker:
		fmt.Fprintln(out, "markers   on")
	}
	if e.RetryOf != "" {
		fmt.Fprintf(out, "retry of  %s (approved)\n", e.RetryOf)
	}
	if e.RetriedBy != "" {
		fmt.Fprintf(out, "retried   by %s\n", e.RetriedBy)
	}
	if x := e.End; x != nil {
		fmt.Fprintf(out, "end       %s", x.Outcome)
		switch x.Outcome {
		case api.OutcomeExited:
			fmt.Fprintf(out, " %d", x.ExitStatus)
		case api.OutcomeSignaled:
			fmt.Fprintf(out, " %s", shown(x.Signal))
		}
		if x.ErrorMsg != "" {
			fmt.Fprintf(out, " (%s)", safetext.Field(x.ErrorMsg, safetext.Line))
		}
		fmt.Fprintf(out, " at %s; %d bytes in, %d out, %d err", x.At.Local().Format(time.RFC3339), x.BytesIn, x.BytesOut, x.BytesErr)
		if x.ClientGone {
			fmt.Fprint(out, "; the client was gone, the bastion read the rest")
		}
		fmt.Fprintln(out)
		if len(x.OutputTail) > 0 {
			fmt.Fprintf(out, "output    (the end) %s\n", safetext.Bytes(x.OutputTail, 0))
		}
	}
	if u := e.Unknown; u != nil {
		fmt.Fprintf(out, "unknown   %s (%s, last phase %s) at %s\n", u.Reason, safetext.Field(u.Detail, safetext.Line), u.LastPhase, u.At.Local().Format(time.RFC3339))
	}
	for _, r := range e.Resolutions {
		fmt.Fprintf(out, "resolved  %s by %s", r.Result, safetext.Field(r.By, safetext.Line))
		if r.ExitStatus != nil {
			fmt.Fprintf(out, " (status %d)", *r.ExitStatus)
		}
		fmt.Fprintf(out, " at %s\n", r.At.Local().Format(time.RFC3339))
		if r.Evidence != "" {
			for i, l := range strings.Split(strings.TrimSpace(r.Evidence), "\n") {
				if i == 0 {
					fmt.Fprintf(out, "evidence  %s\n", safetext.Escape(l))
				} else {
					fmt.Fprintf(out, "          %s\n", safetext.Escape(l))
				}
			}
		}
	}
}

// followJournal prints the entries still running, then entries as they
// start and change, as the gateway streams them, until interrupted.
func followJournal(c *api.Client, out io.Writer, asJSON bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.FollowJournal(ctx, nil, func(e *api.JournalEntry) error {
		if asJSON {
			return printJSONLines(out, []*api.JournalEntry{e})
		}
		_, err := fmt.Fprintln(out, entryLine(e))
		return err
	})
}

// listJournal prints entries as they are read, a page at a time.
func listJournal(ctx context.Context, src journalReader, out io.Writer, status string, limit int, asJSON bool) error {
	w := bufio.NewWriterSize(out, 64<<10)
	arr := &jsonArray{w: w}
	n := 0
	err := api.EachJournalEntry(ctx, src, status, limit, func(e *api.JournalEntry) error {
		n++
		if asJSON {
			return arr.add(e)
		}
		_, err := fmt.Fprintln(w, entryLine(e))
		return err
	})
	switch {
	case err != nil:
		err = arr.cut(err)
	case asJSON:
		err = arr.close()
	case n == 0:
		fmt.Fprintln(w, "no journal entries")
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}
