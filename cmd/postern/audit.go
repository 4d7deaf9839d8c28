package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

const auditUsage = `Usage: postern audit verify [--json] [--pin KEY] [LOG]
       postern audit show [--json] [--passphrase-file FILE] [LOG]
       postern activity [--since TIME] [--json] [--passphrase-file FILE]
       postern sessions --history [--json] [--passphrase-file FILE]

verify checks a log offline, without any key: framing, hash chain,
checkpoint signatures and key chain, and names the first bad record.
Exit status 3 when it fails. show, activity and sessions --history decrypt
the log with the identity kept in the vault (they ask for its passphrase).
`

func cmdAudit(args []string, out, errw io.Writer) error {
	if len(args) == 0 {
		return usagef("audit: missing subcommand (verify or show)")
	}
	switch args[0] {
	case "verify":
		return auditVerify(args[1:], out, errw)
	case "show":
		return auditShow(args[1:], out, errw)
	case "-h", "-help", "--help":
		return &helpRequest{auditUsage}
	}
	return usagef("audit: unknown subcommand %q", args[0])
}

func auditLogPath(fsArg string) (string, error) {
	if fsArg != "" {
		return fsArg, nil
	}
	return api.AuditLogPath()
}

func auditVerify(args []string, out, errw io.Writer) error {
	fs := newFlags("audit verify", auditUsage)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pin := fs.String("pin", "", "the log's first checkpoint key (postern-audit+…), as printed by postern vault init")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("audit verify: at most one log")
	}
	path, err := auditLogPath(fs.Arg(0))
	if err != nil {
		return err
	}
	var pk0 api.AuditPin
	pinFrom := ""
	switch {
	case *pin != "":
		if pk0, err = api.ParseAuditPin(*pin); err != nil {
			return usagef("audit verify: --pin: %v", err)
		}
		pinFrom = "--pin"
	default:
		if p, name, err := api.PinBeside(path); err == nil {
			pk0, pinFrom = p, name
		}
	}
	r, err := api.VerifyAuditLog(path, pk0)
	if err != nil {
		return err
	}
	if *asJSON {
		printJSON(out, r)
	} else {
		printReport(out, path, pinFrom, r)
	}
	if !r.OK {
		return &exitError{exitAudit}
	}
	return nil
}

func printReport(out io.Writer, path, pinFrom string, r *api.AuditReport) {
	status := "OK"
	if !r.OK {
		status = "FAILED"
	}
	fmt.Fprintf(out, "%s: %s\n", path, status)
	if r.Failure != nil {
		fmt.Fprintf(out, "  first bad record: seq %d at byte %d: %s (%s)\n", r.Failure.Seq, r.Failure.Offset, r.Failure.Message, r.Failure.Kind)
	}
	fmt.Fprintf(out, "  records %d (entries %d, checkpoints %d), %d bytes, log id %s\n", r.Records, r.Entries, r.Checkpoints, r.Bytes, r.LogID)
	switch {
	case r.PK0Pinned && pinFrom == "--pin":
		fmt.Fprintln(out, "  first checkpoint key: matches the key given with --pin")
	case r.PK0Pinned:
		fmt.Fprintf(out, "  first checkpoint key: matches %s beside the log (give --pin the key printed at vault init to rule out a replaced pin file)\n", pinFrom)
	default:
		fmt.Fprintln(out, "  first checkpoint key: not pinned (give --pin the key printed at vault init)")
	}
	if c := r.LastCheckpoint; c != nil {
		fmt.Fprintf(out, "  last checkpoint: epoch %d at seq %d, %s; %d entries after it are not sealed yet\n", c.Epoch, c.Seq, c.Time.Local().Format(time.RFC3339), r.UnsealedEntries)
	}
	if r.Torn != nil {
		fmt.Fprintf(out, "  warning: torn last record (a crash while writing): %d bytes at offset %d\n", r.Torn.Bytes, r.Torn.Offset)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", w)
	}
	for _, c := range r.CannotProve {
		fmt.Fprintf(out, "  cannot prove: %s\n", c)
	}
}

// readAudit decrypts every event of the log, with the identity kept in
// the vault (asking for its passphrase).
func readAudit(pfile, path string) ([]api.AuditEvent, error) {
	path, err := auditLogPath(path)
	if err != nil {
		return nil, err
	}
	return api.ReadAuditLog(path, func() (*vault.Vault, error) { return openVault(pfile) })
}

func auditShow(args []string, out, errw io.Writer) error {
	fs := newFlags("audit show", auditUsage)
	asJSON := fs.Bool("json", false, "print JSON Lines, one event per line")
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	events, err := readAudit(*pfile, fs.Arg(0))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLines(out, events)
	}
	for _, l := range api.Activity(events, time.Time{}) {
		fmt.Fprintln(out, l.Text)
	}
	return nil
}

func cmdActivity(args []string, out, errw io.Writer) error {
	fs := newFlags("activity", auditUsage)
	asJSON := fs.Bool("json", false, "print JSON Lines, one line per event")
	since := fs.String("since", "", "only events from this time on: RFC 3339, or a duration ago such as 1h")
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	from, err := parseSince(*since)
	if err != nil {
		return usagef("activity: --since: %v", err)
	}
	events, err := readAudit(*pfile, "")
	if err != nil {
		return err
	}
	lines := api.Activity(events, from)
	if *asJSON {
		return printJSONLines(out, lines)
	}
	for _, l := range lines {
		fmt.Fprintln(out, l.Text)
	}
	return nil
}

func parseSince(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Parse(time.RFC3339, s)
}

// sessionsHistory prints the sessions the audit log shows.
func sessionsHistory(out io.Writer, pfile string, asJSON bool) error {
	events, err := readAudit(pfile, "")
	if err != nil {
		return err
	}
	sessions := api.AuditSessions(events)
	if asJSON {
		return printJSON(out, sessions)
	}
	for _, s := range sessions {
		end := "open"
		if !s.Ended.IsZero() {
			end = "ended " + s.Ended.Local().Format("2006-01-02 15:04:05") + " (" + string(s.EndReason) + ")"
		}
		who := s.Run
		if s.Process != nil {
			who += fmt.Sprintf(" %s pid %d", filepath.Base(s.Process.Exe), s.Process.PID)
		}
		if s.Label != "" {
			who += fmt.Sprintf(" label %q", s.Label)
		}
		fmt.Fprintf(out, "%s  %s  key %s  approved %s by %s, %d signatures, %s\n",
			s.Grant, who, s.Key, s.Approved.Local().Format("2006-01-02 15:04:05"), s.Approver, s.Signs, end)
	}
	return nil
}
