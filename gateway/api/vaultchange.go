package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// A change to the vault (keys and certificates added, keys removed, a new
// passphrase) is a
// change of authority, and every one is an audit event, recorded before
// the vault file is written. A running gateway makes the change
// (OpVaultChange, Client.ChangeVault) and records it in its log; with no
// gateway, ChangeVault does both here. ApplyVaultChange is the one place
// that pairs a change with its events, for both.

// VaultChange asks for a change to the vault (OpVaultChange): keys to add,
// a key to remove, a new passphrase, or several of these at once.
type VaultChange struct {
	// Path is the vault the change is for: a gateway that keeps another
	// refuses it (CodeNotFound). Empty: whichever it keeps.
	Path string `json:"path,omitempty"`
	// Passphrase opens the vault: a change needs it even while the
	// gateway is unlocked.
	Passphrase []byte `json:"passphrase"`
	// Add holds keys made with vault.NewKey (secret: wiped after use).
	Add []vault.Key `json:"add,omitempty"`
	// AddCertificates holds OpenSSH certificates (wire format) for keys
	// in the vault or in Add, each stored beside its key.
	AddCertificates [][]byte `json:"add_certificates,omitempty"`
	// Remove names a key by fingerprint or comment.
	Remove string `json:"remove,omitempty"`
	// NewPassphrase, when set, reseals the vault under it with the KDF
	// parameters Params.
	NewPassphrase []byte        `json:"new_passphrase,omitempty"`
	Params        *vault.Params `json:"params,omitempty"`
}

// Wipe clears the secrets the change carries.
func (c *VaultChange) Wipe() {
	clear(c.Passphrase)
	clear(c.NewPassphrase)
	for i := range c.Add {
		c.Add[i].Wipe()
	}
}

// VaultChanged answers a VaultChange: what changed, and the vault file.
type VaultChanged struct {
	Path         string          `json:"path"`
	Added        []VaultKeyInfo  `json:"added,omitempty"`
	Certificates []VaultCertInfo `json:"certificates,omitempty"`
	Removed      *VaultKeyInfo   `json:"removed,omitempty"`
	// Params are the KDF parameters of a new passphrase.
	Params *vault.Params `json:"params,omitempty"`
	// Generation is the vault's save counter after the change.
	Generation uint64 `json:"generation"`
}

// VaultKeyInfo names a key.
type VaultKeyInfo struct {
	Fingerprint string `json:"fingerprint"`
	Comment     string `json:"comment"`
}

// VaultCertInfo names a certificate added, and its key.
type VaultCertInfo struct {
	KeyID       string `json:"key_id"`
	Type        string `json:"type"`
	Fingerprint string `json:"fingerprint"` // of the key it certifies
	Comment     string `json:"comment"`     // the key's
}

// ErrAuditLogHeld is returned by ChangeVault when a running gateway holds
// the audit log: the change must go through that gateway, which records
// it.
var ErrAuditLogHeld = errors.New("the audit log is held by a running gateway")

// ApplyVaultChange makes c on v, an open vault, and writes it. Each key
// added or removed and a new passphrase is an event, given to record
// (which stamps and appends it) before anything is written: when record
// fails, the file stays as it was. by names who asked.
func ApplyVaultChange(v *vault.Vault, c *VaultChange, by string, record func(audit.Event) error) (*VaultChanged, error) {
	gen := strconv.FormatUint(v.Generation()+1, 10)
	res := &VaultChanged{Path: v.Path(), Generation: v.Generation() + 1}
	var events []audit.Event
	for _, k := range c.Add {
		if err := v.AddKey(k); err != nil {
			return nil, fmt.Errorf("adding %q: %w", k.Comment, err)
		}
		fp, err := k.Fingerprint()
		if err != nil {
			return nil, err
		}
		res.Added = append(res.Added, VaultKeyInfo{Fingerprint: fp, Comment: k.Comment})
		events = append(events, audit.Event{Type: audit.EventVaultKeyAdded, Key: fp, Approver: by,
			Detail: map[string]string{"comment": k.Comment, "generation": gen}})
	}
	for _, blob := range c.AddCertificates {
		cert, err := vault.ParseCertificate(blob)
		if err != nil {
			return nil, err
		}
		comment, err := v.AddCertificate(cert)
		switch {
		case errors.Is(err, vault.ErrNoKeyForCert):
			return nil, fmt.Errorf("certificate %q: %w (add its private key first)", cert.KeyId, err)
		case err != nil:
			return nil, fmt.Errorf("certificate %q: %w", cert.KeyId, err)
		}
		info := VaultCertInfo{KeyID: cert.KeyId, Type: cert.Type(), Fingerprint: ssh.FingerprintSHA256(cert.Key), Comment: comment}
		res.Certificates = append(res.Certificates, info)
		events = append(events, audit.Event{Type: audit.EventVaultCertificateAdded, Key: info.Fingerprint, Approver: by,
			Detail: map[string]string{"key_id": cert.KeyId, "type": info.Type, "ca": ssh.FingerprintSHA256(cert.SignatureKey),
				"principals": strings.Join(cert.ValidPrincipals, ","), "comment": comment, "generation": gen}})
	}
	if c.Remove != "" {
		removed, err := removeKey(v, c.Remove)
		if err != nil {
			return nil, err
		}
		res.Removed = removed
		events = append(events, audit.Event{Type: audit.EventVaultKeyRemoved, Key: removed.Fingerprint, Approver: by,
			Detail: map[string]string{"comment": removed.Comment, "generation": gen}})
	}
	if c.NewPassphrase != nil {
		if c.Params == nil {
			return nil, errors.New("a new passphrase needs its KDF parameters")
		}
		if err := c.Params.Validate(); err != nil {
			return nil, err
		}
		res.Params = c.Params
		events = append(events, audit.Event{Type: audit.EventVaultPassphraseChanged, Approver: by,
			Detail: map[string]string{"kdf": c.Params.String(), "generation": gen}})
	}
	if len(events) == 0 {
		return nil, errors.New("the change changes nothing")
	}
	for _, ev := range events {
		if err := record(ev); err != nil {
			return nil, fmt.Errorf("the audit log cannot record the change, so the vault was not changed: %w", err)
		}
	}
	var err error
	if c.NewPassphrase != nil {
		err = v.ChangePassphrase(c.NewPassphrase, *c.Params)
	} else {
		err = v.Save()
	}
	if err != nil && !vault.Written(err) {
		// The events above name a generation the vault did not reach,
		// and the next change writes: the log says they did not happen.
		ev := audit.Event{Type: audit.EventVaultChangeNotWritten, Approver: by,
			Detail: map[string]string{"generation": gen, "error": err.Error()}}
		if rerr := record(ev); rerr != nil {
			return nil, fmt.Errorf("%w; the vault was not changed, and the audit log, which records the change, could not record that: %v", err, rerr)
		}
		return nil, fmt.Errorf("%w; the vault was not changed, as the audit log records", err)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// removeKey removes the key match names and says which it was.
func removeKey(v *vault.Vault, match string) (*VaultKeyInfo, error) {
	before, err := v.KeyInfos()
	if err != nil {
		return nil, err
	}
	if err := v.RemoveKey(match); err != nil {
		return nil, err
	}
	after, err := v.KeyInfos()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, k := range after {
		kept[k.Fingerprint] = true
	}
	for _, k := range before {
		if !kept[k.Fingerprint] {
			return &VaultKeyInfo{Fingerprint: k.Fingerprint, Comment: k.Comment}, nil
		}
	}
	return nil, fmt.Errorf("removing %q removed no key", match)
}

// ChangeVault makes c with no gateway running: it opens the audit log
// set up with the vault (waiting for another change that holds it;
// ErrAuditLogHeld when it is held longer, as a gateway holds it), opens
// the vault with c.Passphrase, and makes the change with its events as a
// gateway does. After a wrong passphrase it waits as the gateway does.
func ChangeVault(c *VaultChange) (*VaultChanged, error) {
	stateDir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(stateDir, xdg.VaultFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no vault at %s: %w", path, vault.ErrNotExist)
	}
	log, err := openAuditLog(stateDir)
	if err != nil {
		return nil, err
	}
	record := func(audit.Event) error { return nil }
	if log != nil {
		// Its events are durable once appended; closing adds the
		// checkpoint that seals them (verify reports them as unsealed
		// should that fail).
		defer log.Close()
		record = log.Append
	}
	v, err := vault.Open(path, c.Passphrase)
	if errors.Is(err, vault.ErrWrongPassphrase) {
		time.Sleep(vault.WrongPassphraseDelay(1))
	}
	if err != nil {
		return nil, err
	}
	defer v.Wipe()
	return ApplyVaultChange(v, c, self(), record)
}

// auditLogWait bounds how long a change made with no gateway waits for
// the audit log while another writer holds it: another such change holds
// it for its key derivation and write (about a second), a gateway for as
// long as it runs.
const auditLogWait = 10 * time.Second

// openAuditLog opens the audit log set up in stateDir for appending, or
// returns nil when none is set up. While another writer holds the log it
// waits, up to auditLogWait: changes made at once, with no gateway, each
// get their turn.
func openAuditLog(stateDir string) (*audit.Log, error) {
	setup, err := audit.LoadSetup(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit log setup: %w", err)
	}
	deadline := time.Now().Add(auditLogWait)
	for {
		log, err := audit.Open(setup.Config(filepath.Join(stateDir, xdg.AuditLogFile)))
		switch {
		case !errors.Is(err, audit.ErrLocked):
			return log, err
		case time.Now().After(deadline):
			return nil, ErrAuditLogHeld
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// self describes this process for the events it records.
func self() string {
	p, err := procid.Host.Inspect(os.Getpid())
	if err != nil {
		return "pid=" + strconv.Itoa(os.Getpid())
	}
	return p.Describe() + " (no gateway)"
}
