package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/getopt"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/vault"
)

// readHeap is how much memory the Go runtime of a command reading the
// audit log may hold before it collects.
const readHeap = 40 << 20

// readAudit passes the events of the log to fn as it decrypts them. The
// gateway reads its own log, when it answers with its vault unlocked (no
// passphrase, no key derivation here); otherwise, or with offline, the log
// is read here with the identity kept in the vault (asking for its
// passphrase).
func readAudit(pfile, arg string, offline bool, opts api.AuditReadOptions, fn func(api.AuditEvent) error) error {
	path, err := auditLogPath(arg)
	if err != nil {
		return err
	}
	var gwErr error
	if !offline {
		restore := collectLess()
		done, err := readThroughGateway(path, opts, fn)
		restore()
		if done {
			return err
		}
		gwErr = err
	}
	restore := func() {}
	err = api.ReadAuditLog(path, func() (*vault.Vault, error) {
		v, err := openVault(pfile)
		// The key derivation's memory (64 MiB or more) is garbage now: give
		// it back before the log is read, so that reading starts from a
		// small heap instead of one sized by the derivation.
		debug.FreeOSMemory()
		restore = collectLess()
		return v, err
	}, opts, fn)
	restore()
	err = hintLocked(err, gwErr)
	if own, _ := api.AuditLogPath(); arg != "" && !api.SameFile(arg, own) && errors.Is(err, api.ErrAuditLogFailed) {
		// A copy named on the command line: "postern audit new", which
		// the hint of a damaged log names, would retire the state
		// directory's log, not this one.
		return withHint(err, `"postern audit verify `+arg+`" names the first bad record`)
	}
	return err
}

// collectLess makes the collector run when the Go runtime's memory nears
// readHeap, instead of each time the heap doubles, until restore: a read
// of the log makes garbage at every event and keeps little, and on a long
// log collecting at every doubling is most of the command's own cost.
// Not while the vault's key is derived (it needs more than readHeap).
func collectLess() (restore func()) {
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(readHeap)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}
}

// readThroughGateway asks the gateway at $SSH_AUTH_SOCK, or else at the
// well-known socket, for the events of the log at path. done is false when
// no gateway answered with an event, and the log is to be read here: none
// runs (none is started for this), it is locked, keeps another log or no
// log, is older than this command, or refuses a caller inside a run; err
// then says why, when a gateway answered.
func readThroughGateway(path string, opts api.AuditReadOptions, fn func(api.AuditEvent) error) (done bool, err error) {
	c := servingGateway()
	if c == nil {
		return false, nil
	}
	opts.Log = path
	passed := false
	err = c.ReadAudit(context.Background(), opts, func(e api.AuditEvent) error {
		passed = true
		return fn(e)
	})
	if err != nil && cannotServe(err) && !passed {
		return false, err
	}
	return true, err
}

// historyFlags are the selection flags of audit show and activity.
type historyFlags struct {
	asJSON  *bool
	since   *string
	run     *string
	pfile   *string
	offline *bool
}

func addHistoryFlags(fs *flag.FlagSet, jsonHelp string) historyFlags {
	return historyFlags{
		asJSON:  fs.Bool("json", false, jsonHelp),
		since:   fs.String("since", "", "only events from this time on: a date (2026-12-01), a local time (2026-12-01 15:04), RFC 3339, or a duration ago (90m, 3d)"),
		run:     fs.String("run", "", "only the events of this run"),
		pfile:   passphraseFileFlag(fs),
		offline: offlineFlag(fs),
	}
}

// offlineFlag is --offline of the commands that read the audit log.
func offlineFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("offline", false, "read the log file here, asking for the vault's passphrase, even when a gateway with its vault unlocked could read it")
}

func (h historyFlags) options(cmd string) (api.AuditReadOptions, error) {
	from, err := parseSince(*h.since)
	if err != nil {
		return api.AuditReadOptions{}, usagef("%s: --since: %v", cmd, err)
	}
	return api.AuditReadOptions{Since: from, Run: *h.run}, nil
}

func auditShow(args []string, out, errw io.Writer) error {
	fs := newFlags("audit show", auditUsage)
	h := addHistoryFlags(fs, "print JSON Lines, one event per line")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := oneOperand(fs)
	if err != nil {
		return err
	}
	opts, err := h.options("audit show")
	if err != nil {
		return err
	}
	return printHistory(out, errw, *h.pfile, log, *h.offline, opts, *h.asJSON, false)
}

func cmdActivity(args []string, out, errw io.Writer) error {
	fs := newFlags("activity", auditUsage)
	h := addHistoryFlags(fs, "print JSON Lines, one line per event")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	opts, err := h.options("activity")
	if err != nil {
		return err
	}
	return printHistory(out, errw, *h.pfile, "", *h.offline, opts, *h.asJSON, true)
}

// printHistory prints the events of the log as they are read: as timeline
// lines, or in JSON Lines as events (audit show) or lines (activity). In
// text, it says so when no event was printed, and it warns (on errw) of
// the lines it printed after the log's last checkpoint, which no
// signature covers yet.
func printHistory(out, errw io.Writer, pfile, path string, offline bool, opts api.AuditReadOptions, asJSON, lines bool) error {
	w := bufio.NewWriterSize(out, 64<<10)
	enc := json.NewEncoder(w)
	tl := api.NewTimeline(opts.Since, opts.Run)
	var buf []byte
	printed := false
	unsealed := 0 // lines printed since the last checkpoint
	err := readAudit(pfile, path, offline, opts, func(e api.AuditEvent) error {
		if e.Type == api.EventCheckpoint {
			unsealed = 0
		}
		if asJSON && !lines {
			// Events as they are: the timeline only selects them.
			if !tl.Keeps(&e) {
				return nil
			}
			var err error
			if buf, err = api.AppendAuditEventJSON(buf[:0], &e); err != nil {
				return err
			}
			_, err = w.Write(append(buf, '\n'))
			return err
		}
		l, ok := tl.Add(&e)
		switch {
		case !ok:
			return nil
		case asJSON:
			return enc.Encode(l)
		}
		printed = true
		if e.Type != api.EventCheckpoint {
			unsealed++
		}
		w.WriteString(l.Text)
		return w.WriteByte('\n')
	})
	if err == nil && !asJSON && !printed {
		w.WriteString(noEvents(opts) + "\n")
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err == nil && unsealed > 0 {
		warningf(errw, "%s", unsealedNote(unsealed))
	}
	return err
}

// unsealedNote says that the last n lines printed come after the log's
// last checkpoint.
func unsealedNote(n int) string {
	lines, follow, them := fmt.Sprintf("the last %d lines", n), "follow", "them"
	if n == 1 {
		lines, follow, them = "the last line", "follows", "it"
	}
	return fmt.Sprintf("%s %s the log's last checkpoint: no signature covers %s yet (the gateway signs a checkpoint every 256 entries or 5 minutes, when the vault locks and when it stops), so a program that can write the log file could have added or changed %s", lines, follow, them, them)
}

// noEvents says that the log holds no event of those asked for.
func noEvents(opts api.AuditReadOptions) string {
	s := "no events"
	if opts.Run != "" {
		s += " of run " + strconv.Quote(opts.Run)
	}
	if !opts.Since.IsZero() {
		s += " since " + opts.Since.Local().Format(time.DateTime)
	}
	return s + " in the audit log"
}

// parseSince reads --since: a time (RFC 3339, or a date and a time of
// day in local time, or a date alone: its midnight), or a duration ago
// (Go's "1h30m", "90s", or OpenSSH's "3d", "1w").
func parseSince(s string) (time.Time, error) {
	return parseSinceAt(s, time.Now())
}

// sinceLayouts are the times --since takes, local unless they say.
var sinceLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

func parseSinceAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := durationAgo(s); ok {
		return now.Add(-d), nil
	}
	if ago, neg := strings.CutPrefix(s, "-"); neg {
		if _, ok := durationAgo(ago); ok {
			// It would be a time to come: nothing to show.
			return time.Time{}, fmt.Errorf("%s is a negative duration: give how long ago, such as %s", safetext.Quote(s, safetext.Name), ago)
		}
	}
	for _, l := range sinceLayouts {
		if t, err := time.ParseInLocation(l, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s is neither a time (2026-12-01, 2026-12-01 15:04, RFC 3339) nor a duration ago (90m, 2h, 3d)", safetext.Quote(s, safetext.Name))
}

// durationAgo reads a duration --since counts back: Go's ("1h30m",
// "90s") or OpenSSH's ("3d", "1w", "600"), never negative.
func durationAgo(s string) (time.Duration, bool) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, true
	}
	d, err := getopt.Lifetime(s)
	return d, err == nil
}

// sessionsHistory prints the sessions the audit log shows, each as soon as
// the log shows it ended, then those still open.
func sessionsHistory(out io.Writer, pfile string, offline, asJSON bool) error {
	w := bufio.NewWriterSize(out, 64<<10)
	arr := &jsonArray{w: w}
	n := 0
	cut := false // the read stopped short: the end of a session open then is not known
	emit := func(s api.AuditSession) {
		n++
		s.EndUnknown = cut && s.Ended.IsZero()
		if asJSON {
			arr.add(s)
			return
		}
		w.WriteString(sessionLine(s))
	}
	book := api.NewSessionBook()
	err := readAudit(pfile, "", offline, api.AuditReadOptions{}, func(e api.AuditEvent) error {
		book.Add(&e, emit)
		return arr.err
	})
	if err == nil {
		book.Flush(emit)
		switch {
		case asJSON:
			err = arr.close()
		case n == 0:
			w.WriteString("no session approval in the audit log\n")
		}
	} else if arr.err == nil {
		// The sessions approved in the part that was read are listed,
		// open or not: the end of one still open there is past where
		// the read stopped.
		cut = true
		book.Flush(emit)
		err = arr.cut(err)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// sessionLine renders one session of sessions --history. The executable
// and the label come from the run, the approver from a description of a
// process, and an entry after the log's last checkpoint may be anyone's:
// each field is escaped (safetext).
func sessionLine(s api.AuditSession) string {
	end := "open"
	switch {
	case s.EndUnknown:
		end = "end not known: reading the log stopped before it"
	case !s.Ended.IsZero():
		end = "ended " + s.Ended.Local().Format("2006-01-02 15:04:05") + " (" + shownName(string(s.EndReason)) + ")"
	}
	who := shownName(s.Run)
	if s.Process != nil {
		who += fmt.Sprintf(" %s pid %d", shown(filepath.Base(s.Process.Exe)), s.Process.PID)
	}
	if s.Label != "" {
		who += " label " + safetext.Quote(s.Label, safetext.Name)
	}
	return fmt.Sprintf("%s  %s  key %s%s  approved %s by %s, %d signatures, %s\n",
		shownName(s.Grant), who, shownName(s.Key), scopeText(s.Dest, s.DestNames, s.Namespace), s.Approved.Local().Format("2006-01-02 15:04:05"), safetext.Field(s.Approver, safetext.Line), s.Signs, end)
}
