package api

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/smallfile"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// An anchor is the chain head the audit log had after one of its
// checkpoints: its log id, the checkpoint's record number and its link.
// Kept where whoever can write the log cannot (another machine, a log
// platform, a sheet of paper), it proves the log was not replaced by an
// older copy since: "postern audit verify --anchor" fails a log that ends
// before the anchor, or differs from it. The gateway writes the latest
// one beside the log (audit.anchor), seals it into the vault while it is
// unlocked, and sends it to syslog when that export is on. Its printable
// form is one line:
//
//	postern-audit-anchor 1 LOGID SEQ LINK

// AuditAnchor is an anchor of an audit log.
type AuditAnchor = audit.Anchor

// SecretAuditAnchor names the anchor the gateway seals into the vault.
const SecretAuditAnchor = "audit-anchor"

// SecretApprovedConfig names the approved configuration the gateway
// seals into the vault.
const SecretApprovedConfig = "approved-config"

// AnchorBeside reads the anchor the gateway writes beside the log at
// logPath (audit.anchor), and returns it and the file's name. It catches
// an older copy of the log only if the anchor was not put back with it.
func AnchorBeside(logPath string) (AuditAnchor, string, error) {
	name := filepath.Join(filepath.Dir(logPath), xdg.AuditAnchorFile)
	b, err := smallfile.Read(name, 64<<10)
	if err != nil {
		return AuditAnchor{}, "", err
	}
	a, err := ParseAnchor(string(b))
	if err != nil {
		return AuditAnchor{}, name, fmt.Errorf("%s: %w", name, err)
	}
	return a, name, nil
}

// SealedAnchor reads the anchor the gateway sealed into the vault, which
// it opens with openVault.
func SealedAnchor(openVault func() (*vault.Vault, error)) (AuditAnchor, error) {
	v, err := openVault()
	if err != nil {
		return AuditAnchor{}, err
	}
	defer v.Wipe()
	sec := v.Secret(SecretAuditAnchor)
	defer clear(sec)
	if len(sec) == 0 {
		return AuditAnchor{}, errors.New("the vault holds no anchor of the audit log yet (a gateway seals one after each checkpoint while the vault is unlocked)")
	}
	return ParseAnchor(string(sec))
}

const anchorPrefix = "postern-audit-anchor 1 "

// FormatAnchor returns the printable form of a.
func FormatAnchor(a AuditAnchor) string {
	return fmt.Sprintf("%s%s %d %s", anchorPrefix, a.LogID, a.Seq, a.Link)
}

// ParseAnchor reads the printable form of an anchor: the line alone, or
// any text (a syslog line, a file) that holds it.
func ParseAnchor(s string) (AuditAnchor, error) {
	i := strings.Index(s, anchorPrefix)
	if i < 0 {
		return AuditAnchor{}, fmt.Errorf("no %q line", strings.TrimSpace(anchorPrefix))
	}
	f := strings.Fields(s[i+len(anchorPrefix):])
	if len(f) < 3 {
		return AuditAnchor{}, fmt.Errorf("an anchor line holds a log id, a record number and a link")
	}
	id, err1 := hex.DecodeString(f[0])
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	link, err3 := hex.DecodeString(f[2])
	if err1 != nil || len(id) != 16 || err2 != nil || err3 != nil || len(link) != 32 {
		return AuditAnchor{}, fmt.Errorf("malformed anchor %q", strings.Join(f[:3], " "))
	}
	return AuditAnchor{LogID: f[0], Seq: seq, Link: f[2]}, nil
}
