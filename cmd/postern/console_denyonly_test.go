package main

import (
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// cutPolicyCard is a policy change card whose change is longer than a
// card shows: the gateway refuses to approve it.
func cutPolicyCard() api.Card {
	return api.Card{ID: "CP", Kind: approvals.KindPolicyChange, Mode: "per-call", Reason: "policy_change",
		Changes: []string{"run.read_write adds " + strings.Repeat("/tmp/postern-writable", 60)}}
}

// A card that can only be denied offers no approval on either console:
// its question names the denial alone and says why, and the keys that
// approve other cards answer nothing and say why, where both consoles
// offered "o" and the gateway then refused it.
func TestConsolesOfferOnlyDenialForACardThatCanOnlyBeDenied(t *testing.T) {
	c := cutPolicyCard()
	if c.DenyOnly() == "" {
		t.Fatal("a card showing a change cut is not deny-only")
	}
	line := newPrompt(c)
	full := newCardPrompt(c)
	for _, q := range []string{line.question(), full.question()} {
		if strings.Contains(q, "[o]nce") || strings.Contains(q, "o approves") || !strings.Contains(q, "can only be denied") {
			t.Errorf("question of a card that can only be denied: %q", q)
		}
	}
	for _, answer := range []string{"o", "once", "s", "session"} {
		if r := line.read(answer); r.verdict != 0 || !strings.Contains(r.note, "can only be denied") {
			t.Errorf("line console, %q: %+v", answer, r)
		}
	}
	for _, k := range []string{"o", "s"} {
		if r := full.key(k); r.verdict != 0 || !strings.Contains(r.note, "can only be denied") {
			t.Errorf("full-screen console, %q: %+v", k, r)
		}
	}
	if r := line.read("d"); r.verdict != api.VerdictDeny {
		t.Errorf("line console, d: %+v", r)
	}
	if r := full.key("d"); r.verdict != api.VerdictDeny {
		t.Errorf("full-screen console, d: %+v", r)
	}
	// A policy change card shown whole is approved as before.
	whole := api.Card{ID: "CQ", Kind: approvals.KindPolicyChange, Mode: "per-call", Changes: []string{"run.read_write adds /tmp/x"}}
	if whole.DenyOnly() != "" || newPrompt(whole).read("o").verdict != api.VerdictOnce || newCardPrompt(whole).key("o").verdict != api.VerdictOnce {
		t.Error("a policy change card shown whole cannot be approved")
	}
}
