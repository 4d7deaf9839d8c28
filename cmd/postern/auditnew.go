package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// auditNew retires the audit log and sets up a new one (postern audit new).
func auditNew(args []string, out, _ io.Writer) error {
	fs := newFlags("audit new", auditUsage)
	pfile := passphraseFileFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("audit new: takes no log: it retires the state directory's")
	}
	r, err := api.NewAuditLog(func() (*vault.Vault, error) { return openVault(*pfile) })
	if errors.Is(err, api.ErrAuditLogHeld) {
		return withHint(err, "stop the gateway first; the new log starts with the next one")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "retired: the audit log and its keys moved to %s\n", r.Dir)
	if r.OldLog != "" {
		// Commands to paste: the path quoted for a shell.
		fmt.Fprintf(out, "  postern audit verify %s\n  postern audit show %s\n", shellQuote(r.OldLog), shellQuote(r.OldLog))
	}
	fmt.Fprintf(out, "new audit log: %s (the gateway starts it at its next start)\n", r.LogPath)
	fmt.Fprintf(out, "its first checkpoint key; keep it somewhere the log's writer cannot change (postern audit verify --pin):\n%s\n", r.NewPin)
	return nil
}
