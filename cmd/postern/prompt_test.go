package main

import (
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// promptCards are a card of each kind the console asks about: a
// production login, a login to a destination not proved or not named, a
// session, a per-call signature.
func promptCards() (prod, unknown, unnamed, session, commit api.Card) {
	subjects := []approvals.RunView{{ProcessView: approvals.ProcessView{PID: 13, Name: "ssh"}}, {ProcessView: approvals.ProcessView{PID: 10, Name: "claude"}}}
	prod = api.Card{ID: "C1", Mode: "per-call", Purpose: "auth", Subjects: subjects, Destination: &approvals.DestView{Fingerprint: "SHA256:x", Names: []string{"prod-db-1"}, Classes: []string{"production"}}}
	unknown = api.Card{ID: "C2", Mode: "per-call", Purpose: "auth", Subjects: subjects, Unverified: "the client did not prove where it connects"}
	unnamed = api.Card{ID: "C3", Mode: "per-call", Purpose: "auth", Subjects: subjects, Destination: &approvals.DestView{Fingerprint: "SHA256:y"}}
	session = api.Card{ID: "C4", Mode: "session", Purpose: "auth", Subjects: subjects, Selected: 1, Destination: &approvals.DestView{Fingerprint: "SHA256:z", Names: []string{"git-host"}}}
	commit = api.Card{ID: "C5", Mode: "per-call", Purpose: "sshsig", Subjects: subjects}
	return
}

func TestPromptReadsDeliberateAnswers(t *testing.T) {
	prod, unknown, unnamed, session, commit := promptCards()

	type step struct {
		line    string
		verdict api.Verdict
		subject int
		note    string
	}
	for _, tt := range []struct {
		name     string
		card     api.Card
		question string
		steps    []step
	}{
		{"a production login takes its name", prod, "card C1: type prod-db-1 to approve this one use, or [d]eny? ", []step{
			{"o", 0, 0, "not approved: type prod-db-1 exactly"},
			{"s", 0, 0, "not approved"},
			{"prod-db", 0, 0, "not approved"},
			{"", 0, 0, ""},
			{"prod-db-1", api.VerdictOnce, -1, ""},
		}},
		{"deny is always one key", prod, "", []step{{"d", api.VerdictDeny, -1, ""}}},
		{"an unknown destination takes unknown", unknown, "card C2: type unknown to approve", []step{{"o", 0, 0, "type unknown"}, {"unknown", api.VerdictOnce, -1, ""}}},
		{"a host key with no name too", unnamed, "card C3: type unknown", []step{{"unknown", api.VerdictOnce, -1, ""}}},
		{"a session card", session, "card C4: [s]ession, [o]nce, [d]eny, or a subject number? ", []step{
			{"7", 0, 0, "not an answer"},
			{"0", 0, 0, "subject: ssh (pid 13)"},
			{"s", api.VerdictSession, 0, ""},
		}},
		{"the preselected subject", session, "", []step{{"session", api.VerdictSession, 1, ""}}},
		{"a per-call signature", commit, "card C5: [o]nce, [d]eny? ", []step{{"s", 0, 0, "not an answer"}, {"o", api.VerdictOnce, -1, ""}}},
	} {
		p := newPrompt(tt.card)
		if !strings.HasPrefix(p.question(), tt.question) {
			t.Errorf("%s: question %q", tt.name, p.question())
		}
		for _, s := range tt.steps {
			r := p.read(s.line + "\n")
			if r.verdict != s.verdict || (r.verdict != 0 && r.subject != s.subject) || !strings.Contains(r.note, s.note) {
				t.Errorf("%s: %q read as %+v, want %+v", tt.name, s.line, r, s)
			}
		}
	}
}

// FuzzPromptRead types lines at the console's prompt for each kind of
// card. Only deny's words deny; only the card's word approves a card
// that asks for one, and only o or once one that does not; only s or
// session gives a session, on a card that offers one, for one of its
// subjects.
func FuzzPromptRead(f *testing.F) {
	for _, s := range []string{"o", "prod-db-1", " prod-db-1 \r", "unknown", "0\ns", "7\n-1\nsession", "+1\ns", "d", "deny\n", "once", "PROD-DB-1", "\u00a0prod-db-1"} {
		for c := range 5 {
			f.Add(s, uint8(c))
		}
	}
	f.Fuzz(func(t *testing.T, input string, which uint8) {
		prod, unknown, unnamed, session, commit := promptCards()
		card := []api.Card{prod, unknown, unnamed, session, commit}[which%5]
		p := newPrompt(card)
		for _, line := range strings.Split(input, "\n") {
			r := p.read(line + "\n")
			typed := strings.TrimSpace(line)
			switch r.verdict {
			case 0:
				continue
			case api.VerdictDeny:
				if typed != "d" && typed != "deny" {
					t.Fatalf("card %s: %q denied", card.ID, line)
				}
			case api.VerdictOnce:
				if p.word != "" && typed != p.word || p.word == "" && typed != "o" && typed != "once" {
					t.Fatalf("card %s (word %q): %q approved once", card.ID, p.word, line)
				}
			case api.VerdictSession:
				if p.word != "" || !card.OffersSession() || typed != "s" && typed != "session" {
					t.Fatalf("card %s: %q approved a session", card.ID, line)
				}
				if r.subject != card.Selected && (r.subject < 0 || r.subject >= len(card.Subjects)) {
					t.Fatalf("card %s: a session for subject %d of %d", card.ID, r.subject, len(card.Subjects))
				}
			default:
				t.Fatalf("card %s: %q read as verdict %v", card.ID, line, r.verdict)
			}
			return // a verdict ends the card
		}
	})
}
