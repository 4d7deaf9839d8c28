package approvals

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/safetext"
)

// A SignedMessage is the message of an SSHSIG signature, where the agent
// found it: a file the requester's command line names (ssh-keygen -Y
// sign's operand, git's signing buffer) whose hash is the very hash the
// request signs. The agent is sent only that hash; a file whose hash
// differs is no message of this signature, and none is shown.
type SignedMessage struct {
	Path string `json:"path"` // as the command line names it
	// Dir is the signing process's working directory, which a relative
	// Path is in (for git, the top of the repository's work tree), as
	// the kernel gives it; "" where it could not be read.
	Dir  string   `json:"dir,omitempty"`
	Size int64    `json:"size"`
	Head []string `json:"head"` // the lines a card shows of it (MessageHead), raw
}

// MessageLines is how many lines of a message a card shows: of a git
// commit or tag, its author (tagger) and its subject; of anything else,
// its first lines that are not empty. A card still fits a terminal of 24
// lines.
const MessageLines = 3

// messageText renders what a signature card says of its message: the
// file whose hash is the one signed and its lines, escaped, or that the
// card cannot know it.
func (v *CardView) messageText() string {
	if v.Purpose != PurposeSSHSig {
		return ""
	}
	m := v.Message
	if m == nil {
		return "Message: not known: no file the command line names has the hash signed\n"
	}
	var b strings.Builder
	switch {
	case m.Dir != "" && !filepath.IsAbs(m.Path):
		fmt.Fprintf(&b, "Message: %s (%d bytes, hash as signed):\n", safetext.Field(filepath.Join(m.Dir, m.Path), safetext.Path), m.Size)
	case m.Dir != "":
		// Git's buffer is in /tmp: where git runs names the repository.
		fmt.Fprintf(&b, "Message: %s (%d bytes, hash as signed), signed in %s:\n", safetext.Field(m.Path, safetext.Path), m.Size, safetext.Field(m.Dir, safetext.Path))
	default:
		fmt.Fprintf(&b, "Message: %s (%d bytes, hash as signed):\n", safetext.Field(m.Path, safetext.Path), m.Size)
	}
	for _, l := range m.Head {
		fmt.Fprintf(&b, "  | %s\n", safetext.Field(l, safetext.Command))
	}
	return b.String()
}

// record adds to an event's detail what the card showed of the message
// (nothing for nil): its path, the directory it was signed in and its
// lines, raw (the readers escape them), so that the record says what
// the person was shown, not only the hash signed.
func (m *SignedMessage) record(detail map[string]string) {
	if m == nil {
		return
	}
	detail["message_path"] = safetext.Cut(m.Path, maxRecordedPath)
	if m.Dir != "" {
		detail["message_dir"] = safetext.Cut(m.Dir, maxRecordedPath)
	}
	if len(m.Head) > 0 {
		detail["message_head"] = strings.Join(m.Head, "\n")
	}
}

// maxRecordedPath bounds a path recorded: a command line can name one
// far longer than any file system takes.
const maxRecordedPath = 4096

// MessageHead returns the lines of message b a card shows (MessageLines
// at most, raw, each cut at max bytes): of a git commit or tag object,
// its author or tagger line and its subject; else its first lines that
// are not empty.
func MessageHead(b []byte, max int) []string {
	lines := strings.Split(string(b), "\n")
	var out []string
	add := func(l string) {
		if len(l) > max {
			l = l[:max]
		}
		out = append(out, l)
	}
	if len(lines) > 0 && (strings.HasPrefix(lines[0], "tree ") || strings.HasPrefix(lines[0], "object ")) {
		// The first author or tagger line alone: a header the requester
		// wrote may hold thousands, and a card shows MessageLines.
		i := 0
		for named := false; i < len(lines) && lines[i] != ""; i++ {
			if !named && (strings.HasPrefix(lines[i], "author ") || strings.HasPrefix(lines[i], "tagger ")) {
				add(lines[i])
				named = true
			}
		}
		for ; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "" {
				add(lines[i])
				break
			}
		}
		return out
	}
	for _, l := range lines {
		if len(out) == MessageLines {
			break
		}
		if strings.TrimSpace(l) != "" {
			add(l)
		}
	}
	return out
}
