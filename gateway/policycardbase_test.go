package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/xdg"
)

// A policy change card lists how the file loosens the approved
// configuration it was judged against. When an unlock puts back another
// approved configuration (the one sealed in the vault) while the file
// does not read, approving the card must not put the file in force
// against that one: the card never showed what it loosens there.
//
// The configuration's directory is reached through a link (as dotfile
// managers make), which a program of the user's retargets without an
// event the gateway watches for.
func TestPolicyCardApprovedAgainstTheApprovedItShowed(t *testing.T) {
	const strict = "approval = \"per-call\"\n[[rule]]\nhost = \"prod-*\"\napproval = \"deny\"\n"
	const rewritten = "approval = \"none\"\n"
	const loose = "approval = \"none\"\n[run]\nread_write = [\"~/.cache\"]\n"
	pass := []byte("seal pass")
	dir, cfg, vaultPath := sealedConfig(t, pass, strict)

	// xdg_config_home -> good (the file) or bad (one that does not read).
	home := filepath.Dir(filepath.Dir(cfg))
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.Rename(home, good); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(bad, "postern"), 0o700)
	os.WriteFile(filepath.Join(bad, "postern", "config.toml"), []byte("approval = \n"), 0o600)
	os.WriteFile(filepath.Join(good, "postern", "config.toml"), []byte(loose), 0o600)
	link := func(to string) {
		tmp := home + ".new"
		os.Remove(tmp)
		if err := os.Symlink(to, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, home); err != nil {
			t.Fatal(err)
		}
	}
	link(good)
	os.WriteFile(filepath.Join(filepath.Dir(vaultPath), xdg.ApprovedConfigFile), []byte(rewritten), 0o600)

	g, sock, _ := runGateway(t, dir)
	c := api.NewClient(sock)
	cards, err := c.Cards(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cards.Cards, func(v approvals.CardView) bool { return v.Kind == approvals.KindPolicyChange })
	if i < 0 {
		t.Fatalf("no policy change card at start: %+v", cards.Cards)
	}
	card := cards.Cards[i]
	if strings.Contains(strings.Join(card.Changes, "; "), "approval") {
		t.Fatalf("the card lists %q: the test's rewritten copy should hide the default's change", card.Changes)
	}

	link(bad)
	unlockGateway(t, sock, pass)
	waitStatus(t, g, "after the unlock", func(st api.Status) bool { return st.Config.Restored != "" })
	link(good)
	c.Answer(context.Background(), card.ID, api.VerdictOnce, -1)

	g.mu.Lock()
	approved, inForce := string(g.approvedRaw), g.config.Approval
	g.mu.Unlock()
	if approved != strict || inForce == "none" {
		t.Fatalf("card %s listed only %q, and its approval put in force approval %q (approved configuration %q)", card.ID, card.Changes, inForce, approved)
	}
}
