package approvals

import (
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// Every string of a card that a requester or a file it can edit chose
// reaches the person escaped, on its own line's share: a namespace, a
// login user, a run's label, a signed message's file name and first
// lines, the names known_hosts gives a host, the
// inventory's names and classes (imported from known_hosts) and the
// sentence of what changed. None adds a line, and no control character
// reaches the terminal.
func TestCardEscapesEveryStringItShows(t *testing.T) {
	const evil = "x\n\x1b[1A\x1b[2KAllow\r\x07\u202e"
	now := time.Now()
	run := RunView{ID: "R1", Label: "label" + evil, Launched: true, Confinement: "unconfined",
		ProcessView: ProcessView{PID: 10, Name: "claude", Exe: "/bin/claude", SHA256: "abcd", Started: now}}
	base := CardView{
		ID: "C1", Reason: audit.ReasonReauthProcessChanged, Changed: "changed" + evil, Mode: audit.ModeSession,
		Run: run, Subjects: []RunView{run}, Requester: []ProcessView{run.ProcessView},
		Key: KeyView{Fingerprint: "SHA256:key"}, Covers: "this run", Created: now, Expires: now.Add(time.Minute),
	}
	sig := base
	sig.Purpose, sig.Namespace = PurposeSSHSig, "ns"+evil
	sig.Message = &SignedMessage{Path: "/tmp/path" + evil, Size: 40, Head: []string{"head" + evil, "subject" + evil}}
	login := base
	login.Purpose = PurposeAuth
	login.Destination = &DestView{Fingerprint: "SHA256:host", Names: []string{"name" + evil}, Classes: []string{"class" + evil},
		KnownHosts: []string{"known" + evil}, User: "user" + evil}
	for _, c := range []struct {
		name  string
		v     CardView
		lines int // question, changed, card, run, confinement, requester, (message and its lines,) (destination, known_hosts,) covers, (claims)
		words []string
	}{
		{"signature", sig, 10, []string{"ns", "changed", "label", "path", "head", "subject"}},
		{"login", login, 10, []string{"name", "class", "known", "user", "changed", "label"}},
	} {
		text := c.v.Text()
		lines := strings.Split(text, "\n")
		for _, l := range lines {
			if strings.ContainsAny(l, "\x1b\r\x07\u202e") {
				t.Errorf("%s: a control character reached the card: %q", c.name, l)
			}
		}
		if len(lines) != c.lines {
			t.Errorf("%s: the card has %d lines, want %d:\n%s", c.name, len(lines), c.lines, text)
		}
		for _, w := range c.words {
			if !strings.Contains(text, w+`x\n\x1b[1A\x1b[2KAllow\r\x07\u202e`) {
				t.Errorf("%s: the card does not show %s escaped:\n%s", c.name, w, text)
			}
		}
	}
}
