package api

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// The audit log is read without a gateway: verifying it needs no key,
// reading it needs the identity kept in the vault.

// AuditReport is what verifying a log found.
type AuditReport = audit.Report

// AuditEvent is one event of the log.
type AuditEvent = audit.Event

// ActivityLine is one line of the log as a timeline.
type ActivityLine = audit.Line

// AuditSession is one session approval as the log shows it.
type AuditSession = audit.Session

// AuditPin is a log's first checkpoint key: it proves the log is the one
// set up with the vault ("postern vault init" prints it).
type AuditPin = ed25519.PublicKey

// AuditLogPath returns the path of the gateway's audit log.
func AuditLogPath() (string, error) { return xdg.StateFile(xdg.AuditLogFile) }

// ParseAuditPin reads a pin in its printable form (postern-audit+…).
func ParseAuditPin(s string) (AuditPin, error) { return audit.ParsePK0(s) }

// PinBeside reads the pin file kept beside the log at logPath, and
// returns the pin and the file's name. It catches a replaced log only if
// the pin file was not replaced too.
func PinBeside(logPath string) (AuditPin, string, error) {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(logPath), xdg.AuditPinFile))
	if err != nil {
		return nil, "", err
	}
	pin, err := ParseAuditPin(strings.TrimSpace(string(b)))
	return pin, xdg.AuditPinFile, err
}

// VerifyAuditLog checks the log at path offline, without any key:
// framing, hash chain, checkpoint signatures and key chain; with a pin,
// also that the log starts from it; with anchors, that it holds each of
// them (a log that ends before one is an older copy). A log that fails is
// a report with OK false, not an error.
func VerifyAuditLog(path string, pin AuditPin, anchors ...AuditAnchor) (*AuditReport, error) {
	return audit.VerifyPath(path, audit.VerifyOptions{PK0: pin, Anchors: anchors})
}

// ErrNoAuditLog is returned by ReadAuditLog when the log does not exist.
var ErrNoAuditLog = errors.New("no audit log")

// ErrAuditLogDamaged is wrapped by the error of a gateway that will not
// start over an audit log that fails verification.
var ErrAuditLogDamaged = audit.ErrDamaged

// AuditReadOptions choose what ReadAuditLog decrypts. With Since or Run
// set, the stretches of the log between checkpoints whose sealed summaries
// rule them out are skipped without being decrypted; events before Since
// or of other runs may still be passed (Timeline filters them).
type AuditReadOptions struct {
	Since time.Time
	Run   string
}

// ReadAuditLog decrypts the events of the log at path, in order, with the
// identity kept in the vault, which it opens with openVault once it found
// the log, and passes them to fn one at a time: memory does not grow with
// the log. A log that fails verification ends with the report's error
// after the events before the bad record.
func ReadAuditLog(path string, openVault func() (*vault.Vault, error), opts AuditReadOptions, fn func(AuditEvent) error) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w at %s", ErrNoAuditLog, path)
	}
	v, err := openVault()
	if err != nil {
		return err
	}
	sec := v.Secret(secretAuditIdentity)
	v.Wipe()
	defer clear(sec)
	if len(sec) != 32 {
		return errors.New("the vault holds no audit log identity (this vault was created before the log, or for another log)")
	}
	id := [32]byte(sec)
	defer clear(id[:])
	rep, err := audit.ReadLog(path, id, audit.ReadOptions{Since: opts.Since, Run: opts.Run}, func(e audit.Event) error { return fn(e) })
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
