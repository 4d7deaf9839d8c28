package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/xdg"
)

// A person approves a policy change card while the vault is locked (the
// gateway starts locked, so a change made while it was stopped is asked
// about then). The approval cannot be sealed until the vault is
// unlocked; at the unlock, the sealed copy is the one the card was
// judged against, so what the person approved stays approved and is
// sealed, rather than put back as if a program had rewritten the state
// directory's copy, and asked about again.
func TestPolicyApprovedWhileLockedIsSealedAtUnlock(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	const loose = "approval = \"session\"\n"
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)
	if err := os.WriteFile(cfg, []byte(loose), 0o600); err != nil {
		t.Fatal(err)
	}
	g, sock, _ := runGateway(t, dir)
	var card approvals.CardView
	for deadline := time.Now().Add(20 * time.Second); card.ID == ""; time.Sleep(20 * time.Millisecond) {
		cards, _ := g.engine.Cards()
		if i := slices.IndexFunc(cards, func(v approvals.CardView) bool { return v.Kind == approvals.KindPolicyChange }); i >= 0 {
			card = cards[i]
		}
		if time.Now().After(deadline) {
			t.Fatal("no policy change card for the looser file")
		}
	}
	if err := g.engine.Answer(card.ID, approvals.Answer{Verdict: approvals.VerdictOnce, Subject: -1, Approver: "test"}, selfPeer(t, g)); err != nil {
		t.Fatalf("approving card %s while the vault is locked: %v", card.ID, err)
	}

	unlockGateway(t, sock, pass)
	st := g.Status()
	g.mu.Lock()
	approved := string(g.approvedRaw)
	g.mu.Unlock()
	if approved != loose || st.Config.Restored != "" || len(st.Config.Pending) > 0 {
		t.Fatalf("after the unlock, the change a person approved on card %s while the vault was locked is undone: approved %q, pending %q, restored %q", card.ID, approved, st.Config.Pending, st.Config.Restored)
	}
	waitSealed(t, vaultPath, pass, loose)
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile)); string(b) != loose {
		t.Fatalf("state directory's copy %q, want the approved %q", b, loose)
	}
}
