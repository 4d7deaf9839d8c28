package api

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// The audit log is read without a gateway: verifying it needs no key,
// reading it needs the identity kept in the vault.

// AuditReport is what verifying a log found.
type AuditReport = audit.Report

// AuditEvent is one event of the log.
type AuditEvent = audit.Event

// EventCheckpoint is the type of a checkpoint as the log's reader passes
// it: the entries before it are signed.
const EventCheckpoint = audit.EventCheckpoint

// ActivityLine is one line of the log as a timeline.
type ActivityLine = audit.Line

// AuditSession is one session approval as the log shows it.
type AuditSession = audit.Session

// AuditPin is a log's first checkpoint key: it proves the log is the one
// set up with the vault ("postern vault init" prints it).
type AuditPin = ed25519.PublicKey

// AuditLogPath returns the path of the gateway's audit log.
func AuditLogPath() (string, error) { return xdg.StateFile(xdg.AuditLogFile) }

// SameFile reports whether a and b name the same existing file: a log or
// vault named on the command line, and the state directory's.
func SameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// ParseAuditPin reads a pin in its printable form (postern-audit+…).
func ParseAuditPin(s string) (AuditPin, error) { return audit.ParsePK0(s) }

// PinBeside reads the pin file kept beside the log at logPath, and
// returns the pin and the file's name. It catches a replaced log only if
// the pin file was not replaced too.
func PinBeside(logPath string) (AuditPin, string, error) {
	b, err := smallfile.Read(filepath.Join(filepath.Dir(logPath), xdg.AuditPinFile), 64<<10)
	if err != nil {
		return nil, "", err
	}
	pin, err := ParseAuditPin(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", filepath.Join(filepath.Dir(logPath), xdg.AuditPinFile), err)
	}
	return pin, xdg.AuditPinFile, nil
}

// AuditVerifyOptions are what a log is checked against: a pin, and
// anchors, each either kept elsewhere or read beside the log.
type AuditVerifyOptions = audit.VerifyOptions

// VerifyAuditLog checks the log at path offline, without any key:
// framing, hash chain, checkpoint signatures and key chain; with a pin,
// also that the log starts from it; with anchors, that it holds each of
// them (a log that ends before one is an older copy). A log that fails is
// a report with OK false, not an error.
func VerifyAuditLog(path string, opts AuditVerifyOptions) (*AuditReport, error) {
	return audit.VerifyPath(path, opts)
}

// ErrNoAuditLog is returned by ReadAuditLog when the log does not exist.
var ErrNoAuditLog = errors.New("no audit log")

// ErrAuditLogDamaged is wrapped by the error of a gateway that will not
// start over an audit log that fails verification.
var ErrAuditLogDamaged = audit.ErrDamaged

// ErrAuditLogFailed is wrapped by the error of ReadAuditLog when a record
// of the log fails verification as it is read.
var ErrAuditLogFailed = audit.ErrVerify

// AuditReadOptions choose what ReadAuditLog decrypts. With Since or Run
// set, the stretches of the log between checkpoints whose sealed summaries
// rule them out are skipped without being decrypted; events before Since
// or of other runs may still be passed (Timeline filters them).
type AuditReadOptions struct {
	Since time.Time `json:"since,omitzero"`
	Run   string    `json:"run,omitempty"`
	// Log, for ReadAudit, is the log the caller means: the gateway
	// answers only when it is the one it keeps (CodeNotFound otherwise).
	Log string `json:"log,omitempty"`
}

// AuditBatch is one response of OpAuditRead: events in log order.
type AuditBatch struct {
	Events []AuditEvent `json:"events,omitempty"`
	// End is set on the last batch: the log was read to its end and
	// verified.
	End bool `json:"end,omitempty"`
}

// AppendAuditBatch appends the JSON of an AuditBatch holding the encoded
// events (each as AppendAuditEventJSON writes it, back to back with commas
// between) to dst, without encoding them again.
func AppendAuditBatch(dst, events []byte, end bool) []byte {
	dst = append(dst, `{"events":[`...)
	dst = append(dst, events...)
	dst = append(dst, ']')
	if end {
		dst = append(dst, `,"end":true`...)
	}
	return append(dst, '}')
}

// decodeAuditBatch decodes the result of an OpAuditRead response.
func decodeAuditBatch(b []byte) (events []AuditEvent, end bool, err error) {
	var raw struct {
		Events []json.RawMessage `json:"events"`
		End    bool              `json:"end"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, false, fmt.Errorf("malformed audit events from the gateway: %w", err)
	}
	events = make([]AuditEvent, len(raw.Events))
	for i, js := range raw.Events {
		if err := audit.DecodeEventJSON(js, &events[i]); err != nil {
			return nil, false, fmt.Errorf("malformed audit event from the gateway: %w", err)
		}
	}
	return events, raw.End, nil
}

// decodeAuditLine reads a response line of OpAuditRead as the gateway
// writes it ({"result":{"events":[…]}} with AppendAuditBatch) without
// encoding/json, which would read each byte three times over; ok is false
// for any other line (an error, an event with escapes), which the caller
// decodes as usual. events is reused.
func decodeAuditLine(line []byte, events []AuditEvent) (_ []AuditEvent, end, ok bool) {
	events = events[:0]
	const head = `{"result":{"events":[`
	if !bytes.HasPrefix(line, []byte(head)) {
		return events, false, false
	}
	b := line[len(head):]
	for len(b) > 0 && b[0] != ']' {
		if len(events) > 0 {
			if b[0] != ',' {
				return events, false, false
			}
			b = b[1:]
		}
		events = append(events, AuditEvent{})
		n, ok := audit.DecodeEventPrefix(b, &events[len(events)-1])
		if !ok {
			return events, false, false
		}
		b = b[n:]
	}
	switch string(b) {
	case `]}}`:
		return events, false, true
	case `],"end":true}}`:
		return events, true, true
	}
	return events, false, false
}

// ReadAudit passes the events of the gateway's audit log to fn, in order,
// as the gateway decrypts them with the identity in its vault: no
// passphrase is asked and no key derived here. The gateway answers only
// while its vault is unlocked (CodeLocked otherwise; CodeNotFound without
// a vault or an audit log, or for another log than opts.Log) and only to a
// caller outside every run (CodeDenied); it refuses before any event. A log that
// fails verification ends with its error after the events before the bad
// record.
func (c *Client) ReadAudit(ctx context.Context, opts AuditReadOptions, fn func(AuditEvent) error) error {
	end := false
	var events []AuditEvent
	err := c.streamLines(ctx, OpAuditRead, opts, func(line []byte) error {
		var ok bool
		if events, end, ok = decodeAuditLine(line, events); !ok {
			result, err := decodeResponse(line)
			if err != nil || len(result) == 0 {
				return err // an error, or the stream is open
			}
			if events, end, err = decodeAuditBatch(result); err != nil {
				return err
			}
		}
		for i := range events {
			if err := fn(events[i]); err != nil {
				return err
			}
		}
		clear(events)
		if end {
			return errOneAnswer
		}
		return nil
	})
	switch {
	case errors.Is(err, errOneAnswer):
		return nil
	case err == nil && !end:
		return errors.New("the gateway ended the audit log's events before the end of the log")
	}
	return err
}

// AuditIdentity returns the audit log's identity kept in an open vault.
func AuditIdentity(v *vault.Vault) ([32]byte, error) {
	sec := v.Secret(secretAuditIdentity)
	defer clear(sec)
	if len(sec) != 32 {
		return [32]byte{}, errors.New("the vault holds no audit log identity (this vault was created before the log, or for another log)")
	}
	return [32]byte(sec), nil
}

// AuditReadChecks returns what the vault v keeps of the state directory's
// log, which a program that can write the log cannot change, for a read
// of that log to verify it against, as "postern audit verify --vault"
// does with the pin: the log's first checkpoint key (a log replaced by
// another fails it) and the anchor sealed into the vault (an older copy
// put back, even with its older audit.anchor, ends before it). Another
// log (a copy, a retired log) is read without them.
func AuditReadChecks(v *vault.Vault) audit.VerifyOptions {
	var o audit.VerifyOptions
	if pk0, err := audit.ParsePK0(v.Meta()[metaAuditPK0]); err == nil {
		o.PK0 = pk0
	}
	sec := v.Secret(SecretAuditAnchor)
	defer clear(sec)
	if len(sec) > 0 {
		if a, err := ParseAnchor(string(sec)); err == nil {
			o.Anchors = []audit.Anchor{a}
		}
	}
	return o
}

// ReadAuditLog decrypts the events of the log at path, in order, with the
// identity kept in the vault, which it opens with openVault once it found
// the log, and passes them to fn one at a time: memory does not grow with
// the log. The state directory's log is verified against what the vault
// keeps of it (AuditReadChecks). A log that fails verification ends with
// the report's error after the events before the bad record.
func ReadAuditLog(path string, openVault func() (*vault.Vault, error), opts AuditReadOptions, fn func(AuditEvent) error) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w at %s", ErrNoAuditLog, path)
	}
	v, err := openVault()
	if err != nil {
		return err
	}
	id, err := auditIdentityFor(v, path)
	var checks audit.VerifyOptions
	if own, oerr := AuditLogPath(); oerr == nil && SameFile(path, own) {
		checks = AuditReadChecks(v)
	}
	v.Wipe()
	defer clear(id[:])
	if err != nil {
		return err
	}
	rep, err := audit.ReadLog(path, id, audit.ReadOptions{VerifyOptions: checks, Since: opts.Since, Run: opts.Run}, func(e audit.Event) error { return fn(e) })
	if err != nil {
		return err
	}
	return rep.Err()
}

// AppendAuditEventJSON appends the JSON of e to dst, as json.Marshal
// writes it, without reflection.
func AppendAuditEventJSON(dst []byte, e *AuditEvent) ([]byte, error) {
	return audit.AppendEventJSON(dst, e)
}

// Timeline renders events one at a time as activity lines.
type Timeline = audit.Timeline

// NewTimeline returns a timeline of the events from since on (zero: all)
// that name run (empty: all).
func NewTimeline(since time.Time, run string) *Timeline { return audit.NewTimeline(since, run) }

// SessionBook projects events one at a time into the session approvals
// they show.
type SessionBook = audit.SessionBook

// NewSessionBook returns an empty book.
func NewSessionBook() *SessionBook { return audit.NewSessionBook() }
