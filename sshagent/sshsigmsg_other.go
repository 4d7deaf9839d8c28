//go:build !linux

package sshagent

import (
	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
)

// findMessage finds no message where the requester's files cannot be
// read as it sees them (no /proc): the card says it cannot know it.
func findMessage(*procid.Table, int, string, []byte) *approvals.SignedMessage { return nil }
