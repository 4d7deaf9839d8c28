package api

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/postern/postern/audit"
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
