package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
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

	g, card := startPolicyCard(t, dir)
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

	peer := selfPeer(t, g)
	g.engine.Answer(card.ID, approvals.Answer{Verdict: approvals.VerdictOnce, Subject: -1, Approver: "test"}, peer)

	g.mu.Lock()
	approved, inForce := string(g.approvedRaw), g.config.Approval
	g.mu.Unlock()
	if approved != strict || inForce == "none" {
		t.Fatalf("card %s listed only %q, and its approval put in force approval %q (approved configuration %q)", card.ID, card.Changes, inForce, approved)
	}
}

// Approving a policy change card puts in force the file the card was
// judged on, and not a file rewritten since, which loosens more than the
// card says (the watch has yet to judge it): the approval is refused,
// and the approved configuration stays.
func TestPolicyCardApprovalTakesNoFileWrittenSince(t *testing.T) {
	const strict = "approval = \"per-call\"\n"
	const loose = "approval = \"none\"\n"
	const looser = "approval = \"none\"\n[run]\nread_write = [\"~/\"]\n"
	pass := []byte("seal pass")
	dir, cfg, _ := sealedConfig(t, pass, strict)
	os.WriteFile(cfg, []byte(loose), 0o600)
	g, card := startPolicyCard(t, dir)
	os.WriteFile(cfg, []byte(looser), 0o600)
	peer := selfPeer(t, g)
	if err := g.engine.Answer(card.ID, approvals.Answer{Verdict: approvals.VerdictOnce, Subject: -1, Approver: "test"}, peer); err == nil {
		t.Error("the approval of a card whose file was rewritten since was taken")
	}
	g.mu.Lock()
	approved, rw := string(g.approvedRaw), g.config.Run.ReadWrite
	g.mu.Unlock()
	if approved == looser || slices.Contains(rw, "~/") {
		t.Fatalf("card %s listed %q, and its approval put in force a file written since (read_write %q; approved %q)", card.ID, card.Changes, rw, approved)
	}
}

// startPolicyCard makes the gateway of the state under dir, not started,
// and returns it with the policy change card it proposes at start.
func startPolicyCard(t *testing.T, dir string) (*Gateway, approvals.CardView) {
	t.Helper()
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
	return g, cards[i]
}

// selfPeer pins the test's own process, an approver outside every run.
func selfPeer(t *testing.T, g *Gateway) *procid.Peer {
	t.Helper()
	peer, err := g.procs.Pin(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return peer
}
