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
// also that the log starts from it. A log that fails is a report with OK
// false, not an error.
func VerifyAuditLog(path string, pin AuditPin) (*AuditReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return audit.Verify(f, audit.VerifyOptions{PK0: pin})
}

// ErrNoAuditLog is returned by ReadAuditLog when the log does not exist.
var ErrNoAuditLog = errors.New("no audit log")

// ErrAuditLogDamaged is wrapped by the error of a gateway that will not
// start over an audit log that fails verification.
var ErrAuditLogDamaged = audit.ErrDamaged

// ReadAuditLog decrypts every event of the log at path with the identity
// kept in the vault, which it opens with openVault once it found the log.
func ReadAuditLog(path string, openVault func() (*vault.Vault, error)) ([]AuditEvent, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoAuditLog, path)
	}
	v, err := openVault()
	if err != nil {
		return nil, err
	}
	defer v.Wipe()
	sec := v.Secret(secretAuditIdentity)
	defer clear(sec)
	if len(sec) != 32 {
		return nil, errors.New("the vault holds no audit log identity (this vault was created before the log, or for another log)")
	}
	id := [32]byte(sec)
	defer clear(id[:])
	return audit.ReadEvents(path, id)
}

// Activity renders events from since on as a timeline.
func Activity(events []AuditEvent, since time.Time) []ActivityLine {
	return audit.Activity(events, since)
}

// AuditSessions projects events into the session approvals they show.
func AuditSessions(events []AuditEvent) []AuditSession { return audit.Sessions(events) }
