package approvals

import "testing"

// The display context an earlier gateway left preselects nothing: one
// rewritten to say the person's login shell was approved for the key
// before has the first card after a restart preselect the requester
// still, not the shell, whose session would cover every program the
// person starts. A grant this gateway gave, ended by a vault lock, does
// preselect its process on the card that asks again.
func TestForgedDisplayContextPreselectsNothing(t *testing.T) {
	w := newWorld(t)
	w.f.Set(40, 1, 400, w.f.Exe("bash", "a shell"), "-bash")
	w.f.Set(41, 40, 410, w.f.Exe("make", "make"), "make", "deploy")
	w.f.Set(42, 41, 420, w.f.Exe("ssh", "ssh"), "ssh", "prod")
	shell := w.f.Peer(40)
	forged := []Past{{BootID: "an-earlier-boot", Run: "R1", PID: 40, Start: shell.StartTicks, Exe: shell.Exe.Path, Key: w.key.Fingerprint, Reason: "vault_state_changed"}}
	if err := savePast(w.cfg.ContextFile, forged); err != nil {
		t.Fatal(err)
	}
	w.e = NewEngine(w.cfg)
	w.e.Restore()
	ch := w.decide(w.req(42))
	c := w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	if sel := c.Subjects[c.Selected]; sel.PID != 42 {
		t.Fatalf("the first card after a restart preselects pid %d (%s), from a display context the user's programs can write", sel.PID, sel.Exe)
	}

	// Approved for a session on make (pid 41), then the vault locks:
	// the card that asks again preselects make.
	ch = w.decide(w.req(42))
	c = w.card()
	if err := w.e.Answer(c.ID, Answer{Verdict: VerdictSession, Subject: 1, Approver: "test"}, w.f.Peer(30)); err != nil {
		t.Fatal(err)
	}
	if d := got(t, ch); !d.Allow {
		t.Fatalf("decision %+v", d)
	}
	w.setVault(true, 8)
	w.e.EpochChanged(true)
	w.setVault(false, 9)
	w.e.EpochChanged(false)
	ch = w.decide(w.req(42))
	c = w.card()
	w.answer(c.ID, VerdictDeny, 30)
	got(t, ch)
	if sel := c.Subjects[c.Selected]; sel.PID != 41 {
		t.Fatalf("the card after a lock preselects pid %d, not make, approved before in this gateway", sel.PID)
	}
}
