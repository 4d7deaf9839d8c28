package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
)

const auditUsage = `Usage: postern audit verify [--json] [--pin KEY] [--anchor FILE|LINE]... [--vault [--passphrase-file FILE]] [LOG]
       postern audit show [--since TIME] [--run RUN] [--json] [--offline] [--passphrase-file FILE] [LOG]
       postern audit new [--passphrase-file FILE]
       postern activity [--since TIME] [--run RUN] [--json] [--offline] [--passphrase-file FILE]
       postern sessions --history [--json] [--offline] [--passphrase-file FILE]

verify checks a log offline, without any key: framing, hash chain,
checkpoint signatures and key chain, and names the first bad record.
It also checks that the log holds each anchor of it: the one beside it
(audit.anchor), each --anchor (an anchor line kept elsewhere, or a file
holding one) and, with --vault, the one sealed into the vault. A log that
ends before an anchor is an older copy. Exit status 3 when it fails.

show, activity and sessions --history print the log's events as they
are read. A running gateway whose vault is unlocked reads its own log for
them (it answers no process inside a run); otherwise, or with --offline,
they decrypt the log here with the identity kept in the vault, and ask
for its passphrase. --since and --run skip, undecrypted, the stretches of
the log whose checkpoints say they hold nothing asked for.

new, with no gateway running, moves the log and its keys aside into a
directory of their own (where they stay readable and verifiable) and sets
up a new log: the way on when the vault refuses to unlock over an older
copy of the log put back on purpose, or when a damaged log cannot be
repaired. It asks for the vault's passphrase and prints the new pin.
`

func cmdAudit(args []string, out, errw io.Writer) error {
	if len(args) == 0 {
		return usagef("audit: missing subcommand (verify, show or new)")
	}
	switch args[0] {
	case "verify":
		return auditVerify(args[1:], out, errw)
	case "show":
		return auditShow(args[1:], out, errw)
	case "new":
		return auditNew(args[1:], out, errw)
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

// anchorFlags collects --anchor values.
type anchorFlags []string

func (a *anchorFlags) String() string     { return strings.Join(*a, ", ") }
func (a *anchorFlags) Set(v string) error { *a = append(*a, v); return nil }

// anchorOf reads an --anchor value: an anchor line, or a file holding one.
// A value that is neither, or a file holding no anchor, is a usage
// error; a file that is there but cannot be read is a failure (exit 1).
func anchorOf(v string) (api.AuditAnchor, error) {
	if a, err := api.ParseAnchor(v); err == nil {
		return a, nil
	}
	b, err := smallfile.Read(v, 64<<10)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return api.AuditAnchor{}, usagef("audit verify: --anchor: %q is neither an anchor line nor a file holding one", v)
	case err != nil:
		return api.AuditAnchor{}, fmt.Errorf("--anchor: %w", err)
	}
	a, err := api.ParseAnchor(string(b))
	if err != nil {
		return api.AuditAnchor{}, usagef("audit verify: --anchor: %s: %v", v, err)
	}
	return a, nil
}

// checkedAnchor is an anchor the log was checked against, and where it
// came from.
type checkedAnchor struct {
	api.AuditAnchor
	from   string
	beside bool // read beside the log: rewritten by whoever cuts it
}

func auditVerify(args []string, out, errw io.Writer) error {
	fs := newFlags("audit verify", auditUsage)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pin := fs.String("pin", "", "the log's first checkpoint key (postern-audit+…), as printed by postern vault init")
	var anchorArgs anchorFlags
	fs.Var(&anchorArgs, "anchor", "an anchor of the log (postern-audit-anchor 1 …), or a file holding one; may be repeated")
	sealed := fs.Bool("vault", false, "check the log against the anchor sealed into the vault (asks for its passphrase)")
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("audit verify: at most one log")
	}
	if err := onlyWith(fs, "vault", "passphrase-file"); err != nil {
		return err
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
		switch p, name, err := api.PinBeside(path); {
		case err == nil:
			pk0, pinFrom = p, name
		case !errors.Is(err, os.ErrNotExist):
			// A pin file any program of the user's can rewrite: said, not
			// passed over as if there were none.
			warningf(errw, "%v: the log's first key is not checked against it", err)
		}
	}
	var anchors []checkedAnchor
	for _, v := range anchorArgs {
		a, err := anchorOf(v)
		if err != nil {
			return err
		}
		anchors = append(anchors, checkedAnchor{a, "--anchor", false})
	}
	// The flags' mistakes first, then a log that is not there.
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if fs.NArg() > 0 {
			return fmt.Errorf("no audit log at %s", path)
		}
		return fmt.Errorf("%w at %s", api.ErrNoAuditLog, path)
	}
	switch a, name, err := api.AnchorBeside(path); {
	case err == nil:
		anchors = append(anchors, checkedAnchor{a, name, true})
	case !errors.Is(err, os.ErrNotExist):
		warningf(errw, "%v: the log is not checked against it", err)
	}
	if *sealed {
		a, err := api.SealedAnchor(func() (*vault.Vault, error) { return openVault(*pfile) })
		if err != nil {
			return err
		}
		anchors = append(anchors, checkedAnchor{a, "the vault", false})
	}
	opts := api.AuditVerifyOptions{PK0: pk0, PK0Beside: pinFrom != "--pin"}
	for _, a := range anchors {
		if a.beside {
			opts.AnchorsBeside = append(opts.AnchorsBeside, a.AuditAnchor)
		} else {
			opts.Anchors = append(opts.Anchors, a.AuditAnchor)
		}
	}
	r, err := api.VerifyAuditLog(path, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		printJSON(out, verifyJSON(r, pinFrom, anchors))
	} else {
		printReport(out, path, pinFrom, anchors, r)
	}
	if !r.OK {
		return &exitError{exitAudit}
	}
	return nil
}

// verifiedJSON is what audit verify --json prints: the report, and, as
// the text says, what pinned the first key and the anchors checked.
type verifiedJSON struct {
	*api.AuditReport
	// PinnedBy is "--pin", or the pin file beside the log (which any
	// program of the user can replace); "" when nothing pinned the key.
	PinnedBy string       `json:"pinned_by,omitempty"`
	Anchors  []anchorJSON `json:"anchors"`
}

// anchorJSON is an anchor the log was checked against, and where it came
// from: "--anchor", "the vault", or the file beside the log.
type anchorJSON struct {
	From string `json:"from"`
	api.AuditAnchor
}

func verifyJSON(r *api.AuditReport, pinFrom string, anchors []checkedAnchor) verifiedJSON {
	v := verifiedJSON{AuditReport: r, Anchors: []anchorJSON{}}
	if r.PK0Pinned {
		v.PinnedBy = pinFrom
	}
	for _, a := range anchors {
		v.Anchors = append(v.Anchors, anchorJSON{a.from, a.AuditAnchor})
	}
	return v
}

func printReport(out io.Writer, path, pinFrom string, anchors []checkedAnchor, r *api.AuditReport) {
	status := "OK"
	if !r.OK {
		status = "FAILED"
	}
	fmt.Fprintf(out, "%s: %s\n", path, status)
	if r.Failure != nil {
		fmt.Fprintf(out, "  first bad record: seq %d at %s: %s (%s)\n", r.Failure.Seq, inFile(path, r.Failure.Offset, r.Failure.File), r.Failure.Message, r.Failure.Kind)
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
	if len(anchors) == 0 {
		fmt.Fprintln(out, "  anchor: none checked (give --anchor a copy of audit.anchor kept elsewhere, or --vault)")
	}
	for _, a := range anchors {
		if r.OK {
			fmt.Fprintf(out, "  anchor from %s: the log holds record %d as anchored\n", a.from, a.Seq)
		} else {
			fmt.Fprintf(out, "  anchor from %s: record %d\n", a.from, a.Seq)
		}
	}
	if c := r.LastCheckpoint; c != nil {
		fmt.Fprintf(out, "  last checkpoint: epoch %d at seq %d, %s; %s after it not sealed yet\n", c.Epoch, c.Seq, c.Time.Local().Format(time.RFC3339), plural(int(r.UnsealedEntries), "entry"))
	}
	if r.Torn != nil {
		fmt.Fprintf(out, "  warning: torn last record (a crash while writing): %d bytes at %s\n", r.Torn.Bytes, inFile(path, r.Torn.Offset, r.Torn.File))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", w)
	}
	for _, c := range r.CannotProve {
		fmt.Fprintf(out, "  cannot prove: %s\n", c)
	}
}

// inFile says where in the log at path a record is (the first bad one, a
// torn one): "byte N" in the log's own file, "byte N of FILE" in a later
// segment.
func inFile(path string, off int64, file string) string {
	s := fmt.Sprintf("byte %d", off)
	if file != "" && file != filepath.Base(path) {
		s += " of " + file
	}
	return s
}
