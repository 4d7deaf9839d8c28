package approvals

import (
	"strings"
	"testing"

	"github.com/postern/postern/audit"
)

// postern check says why a key added with ssh-add -c asks on every call,
// and speaks of a forwarded connection only for one.
func TestCheckOfAConfirmedKey(t *testing.T) {
	p := &Policy{Mode: audit.ModeSession}
	for _, fwd := range []bool{false, true} {
		r := p.Check(Check{Key: Key{Comment: "k", Confirm: true}, Forwarded: fwd})
		if r.Mode != audit.ModePerCall || !strings.Contains(r.Because, "ssh-add -c") || strings.Contains(r.Because, "forwarded") != fwd {
			t.Errorf("forwarded %v: %s, because %s", fwd, r.Mode, r.Because)
		}
	}
}
