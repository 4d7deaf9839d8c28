package approvals

import (
	"strings"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/safetext"
)

// Word is what approving the card takes typed out, on every console, or
// "" when a key is enough: for a per-call login, the destination's name
// from the host inventory (the first that reads as a host name, not
// "[127.0.0.1]:2222" or an address; else the first), or "unknown" when
// the client proved no destination or the host key has no name. A
// notification offers no approval where one is needed.
func (v *CardView) Word() string {
	switch {
	case v.Mode != audit.ModePerCall:
		return ""
	case v.Destination != nil:
		return typedName(v.Destination.Names)
	case v.Unverified != "" && v.Purpose == PurposeAuth:
		return "unknown"
	}
	return ""
}

// QuotedWord is Word between quotes for a sentence, escaped and whole:
// a name of the host inventory holds at most 255 plain characters, and
// one cut with a marker could not be typed, nor told apart from another
// name that differs only past the cut.
func (v *CardView) QuotedWord() string { return safetext.Quote(v.Word(), 0) }

// typedName is the name of names a person types to approve a login.
func typedName(names []string) string {
	for _, n := range names {
		if !strings.ContainsAny(n, "[]:") && strings.ContainsFunc(n, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) {
			return n
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return "unknown"
}
