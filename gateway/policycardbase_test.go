package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/vault"
	"github.com/postern/postern/internal/xdg"
)

// A policy change card lists how the file loosens the approved
// configuration it was judged against. When an unlock puts back another
// approved configuration (the one sealed in the vault) while the file
// does not read, and the file is then put back, approving the card must
// not put the file in force against the sealed one: the card never showed
// what it loosens there. (The gateway is not started: no watcher judges
// the file again behind the test's back, as none does when its events are
// lost.)
func TestPolicyCardApprovedAgainstTheApprovedItShowed(t *testing.T) {
	const strict = "approval = \"per-call\"\n[[rule]]\nhost = \"prod-*\"\napproval = \"deny\"\n"
	const rewritten = "approval = \"none\"\n"
	const loose = "approval = \"none\"\n[run]\nread_write = [\"~/.cache\"]\n"
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)
	os.WriteFile(cfg, []byte(loose), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, err := New(Options{Socket: filepath.Join(dir, "xdg_runtime_dir", "agent.sock")})
	if err != nil {
		t.Fatal(err)
	}
	g.proposePending()
	cards, _ := g.engine.Cards()
	i := slices.IndexFunc(cards, func(v approvals.CardView) bool { return v.Kind == approvals.KindPolicyChange })
	if i < 0 {
		t.Fatalf("no policy change card at start: %+v", cards)
	}
	card := cards[i]
	if strings.Contains(strings.Join(card.Changes, "; "), "approval") {
		t.Fatalf("the card lists %q: the rewritten copy should hide the default's change", card.Changes)
	}

	// The unlock, while the file does not read.
	os.WriteFile(cfg, []byte("approval = \n"), 0o600)
	v, err := vault.Open(vaultPath, pass)
	if err != nil {
		t.Fatal(err)
	}
	g.adoptSealedPolicy(v)
	v.Wipe()
	os.WriteFile(cfg, []byte(loose), 0o600)

	peer, err := g.procs.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	g.engine.Answer(card.ID, approvals.Answer{Verdict: approvals.VerdictOnce, Subject: -1, Approver: "test"}, peer)

	g.mu.Lock()
	approved, inForce := string(g.approvedRaw), g.config.Approval
	g.mu.Unlock()
	if approved != strict || inForce == "none" {
		t.Fatalf("card %s listed only %q, and its approval put in force approval %q (approved configuration %q)", card.ID, card.Changes, inForce, approved)
	}
}
