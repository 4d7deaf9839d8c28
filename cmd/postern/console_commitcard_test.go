package main

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// The card a git commit signature brings, under the default policy (a
// session, session_scope = "key") and from a launched, confined run,
// fits a terminal of 80×24 on both consoles and can be approved there:
// it did not fit the full-screen console, which cut it to a card that
// could only be denied (the header's keys wrapped to a line of their
// own, the one run a session could cover was listed again under the
// card, and Covers named the key the question names). So does the card
// that asks again after a gateway restart.
func TestCommitSignatureCardFitsEightyByTwentyFour(t *testing.T) {
	c := commitCard()
	t.Run("new", func(t *testing.T) { commitCardFits(t, c) })
	// Asked again after a gateway restart, as after every restart: the
	// sentence that says why took three lines, with the key and the
	// namespace the question names, and the card was cut again.
	c.Reason, c.Changed = audit.ReasonReauthGatewayRestarted, approvals.SentenceGatewayRestarted
	t.Run("after a restart", func(t *testing.T) { commitCardFits(t, c) })
}

func commitCardFits(t *testing.T, c api.Card) {
	if !strings.Contains(c.Text(), "Fix the frobnicator") {
		t.Fatalf("the card does not show the commit's subject:\n%s", c.Text())
	}

	m, view, taller := armedConsole(c, 80, 24)
	if taller || strings.Contains(view, "can only be denied") || !strings.Contains(view, "s approves") || !strings.Contains(view, "the vault locks or the gateway restarts") {
		t.Fatalf("the commit signature card in a window of 80×24 (taller: %v):\n%s", taller, m.View().Content)
	}
	if _, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"}); cmd == nil {
		t.Fatalf("the card took no session approval: note %q", m.note)
	}

	if tallerThan(c, newPrompt(c), 80, 24) {
		t.Fatalf("the line console takes the card for one taller than 80×24:\n%s", lineCard(c, 80))
	}
}

// commitCard is the card a git commit signature brings under the default
// policy, from a launched, confined run.
func commitCard() api.Card {
	run := approvals.RunView{ID: "R1a2b3c4d", Label: "agent", Launched: true, Confinement: "confined: namespaces, Landlock ABI 7",
		ProcessView: approvals.ProcessView{PID: 41234, Name: "claude", Exe: "/home/alice/.local/share/claude/versions/2.1.7/claude", SHA256: "0123456789ab", Started: time.Now()}}
	// As approvals.MessageHead reads a commit object.
	head := approvals.MessageHead([]byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor Alice Example <alice@example.com> 1764936000 +0100\ncommitter Alice Example <alice@example.com> 1764936000 +0100\n\nFix the frobnicator when the widget is empty\n\nA longer body.\n"), 200)
	return api.Card{ID: "C12345678", Mode: audit.ModeSession, Purpose: approvals.PurposeSSHSig, Namespace: "git", Reason: audit.ReasonCardNew,
		Subjects: []approvals.RunView{run},
		Requester: []approvals.ProcessView{
			{PID: 50001, Name: "ssh-keygen", Exe: "/usr/bin/ssh-keygen"},
			{PID: 50000, Name: "git", Exe: "/usr/bin/git"},
			{PID: 41300, Name: "bash", Exe: "/usr/bin/bash"},
			run.ProcessView,
		},
		Key:     approvals.KeyView{Fingerprint: "SHA256:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ", Comment: "alice@laptop", Type: "ssh-ed25519"},
		Message: &approvals.SignedMessage{Path: "/tmp/.git_signing_buffer_tmpXyZ123", Dir: "/home/alice/src/frobnicator", Size: 312, Head: head},
		Covers:  approvals.SessionCovers(approvals.ScopeKey, approvals.PurposeSSHSig, nil, 0),
		Created: time.Now(), Expires: time.Now().Add(time.Minute)}
}
