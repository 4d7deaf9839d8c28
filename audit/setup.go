package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/nacl/box"

	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/xdg"
)

// Printable key prefixes.
const (
	pk0Prefix       = "postern-audit+"
	recipientPrefix = "postern-audit-recipient+"
)

// Setup is the key material of a new audit log.
type Setup struct {
	// Recipient is the X25519 public key entries are sealed to. The writer
	// needs only this.
	Recipient [32]byte
	// Identity is the X25519 private key that opens entries. The caller
	// keeps it in the encrypted vault; this package never writes it to disk.
	Identity [32]byte
	// PK0 verifies the first checkpoint. Keep its printable form
	// (FormatPK0) somewhere the log's writer cannot change, and pass it to
	// Verify to pin the log.
	PK0 ed25519.PublicKey

	KeyFile       string
	PinFile       string
	RecipientFile string
}

// PK0String returns PK0 in printable form.
func (s Setup) PK0String() string { return FormatPK0(s.PK0) }

// Config returns a writer configuration for a log at path with this setup's
// keys and default checkpoint policy.
func (s Setup) Config(path string) Config {
	return Config{Path: path, Recipient: s.Recipient, PK0: s.PK0, KeyFile: s.KeyFile}
}

// NewSetup creates the keys of a new audit log in stateDir: an X25519
// recipient and identity, and the Ed25519 key pair sk0/pk0 that starts the
// checkpoint key chain. It writes the key file (sk0 and the key after it,
// mode 0600), the pin file (pk0) and the recipient file, and returns the
// identity for the caller to store in the vault. It refuses to overwrite an
// existing key file.
func NewSetup(stateDir string) (Setup, error) {
	var s Setup
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return s, fmt.Errorf("create audit state directory: %w", err)
	}
	keyPath := filepath.Join(stateDir, xdg.AuditKeyFile)
	if _, err := os.Lstat(keyPath); err == nil {
		return s, fmt.Errorf("audit key file %s already exists: an audit log is already set up there; move the old log and key aside first", keyPath)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("audit key file: %w", err)
	}
	rpub, rpriv, err := box.GenerateKey(rand.Reader)
	if err != nil {
		return s, fmt.Errorf("generate audit recipient: %w", err)
	}
	k := &keyState{epoch: 0, cur: newKey(), next: newKey()}
	defer k.erase()
	s = Setup{
		Recipient:     *rpub,
		Identity:      *rpriv,
		PK0:           k.cur.Public().(ed25519.PublicKey),
		KeyFile:       keyPath,
		PinFile:       filepath.Join(stateDir, xdg.AuditPinFile),
		RecipientFile: filepath.Join(stateDir, xdg.AuditRecipientFile),
	}
	clear(rpriv[:])
	if err := writeKeyFile(keyPath, k); err != nil {
		return Setup{}, err
	}
	if err := atomicfile.Write(s.PinFile, []byte(FormatPK0(s.PK0)+"\n"), 0o644); err != nil {
		return Setup{}, fmt.Errorf("write audit pin file: %w", err)
	}
	if err := atomicfile.Write(s.RecipientFile, []byte(FormatRecipient(s.Recipient)+"\n"), 0o644); err != nil {
		return Setup{}, fmt.Errorf("write audit recipient file: %w", err)
	}
	return s, nil
}

// LoadSetup reads the public parts of a setup from stateDir: the recipient,
// pk0 and the file paths. Identity is left zero.
func LoadSetup(stateDir string) (Setup, error) {
	s := Setup{
		KeyFile:       filepath.Join(stateDir, xdg.AuditKeyFile),
		PinFile:       filepath.Join(stateDir, xdg.AuditPinFile),
		RecipientFile: filepath.Join(stateDir, xdg.AuditRecipientFile),
	}
	pk, err := readKeyString(s.PinFile, ParsePK0)
	if err != nil {
		return Setup{}, err
	}
	r, err := readKeyString(s.RecipientFile, ParseRecipient)
	if err != nil {
		return Setup{}, err
	}
	s.PK0, s.Recipient = pk, r
	return s, nil
}

func readKeyString[T any](path string, parse func(string) (T, error)) (T, error) {
	var zero T
	b, err := smallfile.Read(path, 64<<10)
	if err != nil {
		return zero, fmt.Errorf("read audit setup: %w", err)
	}
	v, err := parse(strings.TrimSpace(string(b)))
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// FormatPK0 returns pk in printable form: "postern-audit+" followed by the
// key in unpadded standard base64.
func FormatPK0(pk ed25519.PublicKey) string {
	return pk0Prefix + base64.RawStdEncoding.EncodeToString(pk)
}

// ParsePK0 parses the printable form of FormatPK0.
func ParsePK0(s string) (ed25519.PublicKey, error) {
	b, err := parseKey(s, pk0Prefix, "audit pin")
	if err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}

// FormatRecipient returns the recipient in printable form:
// "postern-audit-recipient+" followed by unpadded standard base64.
func FormatRecipient(r [32]byte) string {
	return recipientPrefix + base64.RawStdEncoding.EncodeToString(r[:])
}

// ParseRecipient parses the printable form of FormatRecipient.
func ParseRecipient(s string) ([32]byte, error) {
	var r [32]byte
	b, err := parseKey(s, recipientPrefix, "audit recipient")
	if err != nil {
		return r, err
	}
	copy(r[:], b)
	return r, nil
}

func parseKey(s, prefix, what string) ([]byte, error) {
	s = strings.TrimSpace(s)
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return nil, fmt.Errorf("%s key must start with %q", what, prefix)
	}
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(rest, "="))
	if err != nil {
		return nil, fmt.Errorf("%s key is not valid base64: %w", what, err)
	}
	if len(b) != 32 {
		return nil, fmt.Errorf("%s key is %d bytes, want 32", what, len(b))
	}
	return b, nil
}
