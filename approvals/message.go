package approvals

import (
	"fmt"
	"strings"

	"github.com/postern/postern/internal/safetext"
)

// A SignedMessage is the message of an SSHSIG signature, where the agent
// found it: a file the requester's command line names (ssh-keygen -Y
// sign's operand, git's signing buffer) whose hash is the very hash the
// request signs. The agent is sent only that hash; a file whose hash
// differs is no message of this signature, and none is shown.
type SignedMessage struct {
	Path string   `json:"path"` // as the command line names it
	Size int64    `json:"size"`
	Head []string `json:"head"` // its first lines (MessageLines at most), raw
}

// MessageLines is how many of a message's first lines a card shows.
const MessageLines = 8

// messageText renders what a signature card says of its message: the
// file whose hash is the one signed and its first lines, escaped, or
// that the card cannot know it.
func (v *CardView) messageText() string {
	if v.Purpose != PurposeSSHSig {
		return ""
	}
	m := v.Message
	if m == nil {
		return "Message: not known: the agent is sent only its hash, and no file the command line names has that hash\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Message: the file %s (%d bytes), whose hash is the one signed; it begins:\n", safetext.Field(m.Path, safetext.Path), m.Size)
	for _, l := range m.Head {
		fmt.Fprintf(&b, "  | %s\n", safetext.Field(l, safetext.Command))
	}
	return b.String()
}
