package approvals

import (
	"strings"

	"github.com/postern/postern/internal/safetext"
)

// maxClaim bounds the bytes of a requester's command line a card keeps.
// A card shows its first safetext.Command characters; the command line
// itself may be megabytes long (six times that once escaped in JSON), and
// every console is sent every pending card with each snapshot: a few
// such cards would make one longer than a console reads, and hide every
// other card from it.
const maxClaim = 4096

// claimed returns argv as a card keeps it: whole when its arguments hold
// maxClaim bytes at most; else the arguments that fit whole, then the
// rest joined by spaces (as a card shows a command line) and cut
// (safetext.Cut) within maxClaim.
func claimed(argv []string) []string {
	left := maxClaim
	for i, a := range argv {
		if len(a) > left {
			return append(argv[:i:i], safetext.Cut(strings.Join(argv[i:], " "), left))
		}
		left -= len(a)
	}
	return argv
}
