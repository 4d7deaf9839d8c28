package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// A requester's chain of ancestors is as deep as it makes it (a card
// offers up to 65 of them to bind a session to, each named as it chose):
// on the line console the list never comes between the card's question
// (the key, the destination) and the prompt, where it would push the
// question off the screen and fill the screen above the prompt with
// names the requester chose.
func TestLineConsoleCardIsNextToTheQuestion(t *testing.T) {
	now := time.Now()
	var subjects []approvals.RunView
	for i := range 65 {
		subjects = append(subjects, approvals.RunView{ProcessView: approvals.ProcessView{PID: 100 + i,
			Name: "Allow-once-key-SHA256-harmless-for-localhost", Exe: fmt.Sprintf("/tmp/x/%d", i)}})
	}
	c := api.Card{ID: "C1", Mode: "session", Purpose: "auth", Run: subjects[3], Subjects: subjects, Selected: 3,
		Key:         approvals.KeyView{Fingerprint: "SHA256:key"},
		Destination: &approvals.DestView{Fingerprint: "SHA256:host", Names: []string{"prod-db-1"}},
		Covers:      "this run", Created: now, Expires: now.Add(time.Minute)}
	out := strings.Split(strings.TrimSuffix(lineCard(c, 80), "\n"), "\n")
	q := -1
	for i, l := range out {
		if strings.HasPrefix(l, "Allow, for this run until it exits,") {
			q = i
		}
	}
	card := lineCount(wrap(c.Text(), 80))
	if q < 0 || len(out)-q > card {
		t.Fatalf("%d lines come between the card's question and the prompt, the card being %d lines:\n%s", len(out)-q, card, strings.Join(out, "\n"))
	}
	if !strings.Contains(strings.Join(out, "\n"), "  * 3. ") {
		t.Fatalf("the subject the card proposes is not marked:\n%s", strings.Join(out, "\n"))
	}
}
