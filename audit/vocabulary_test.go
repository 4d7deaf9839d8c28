package audit

import "testing"

// A log written before the end reason vault_changed was renamed still
// reads: its sessions end with today's word.
func TestRetiredReason(t *testing.T) {
	evs := []Event{
		{Type: EventSessionApproved, Time: at("10:00:00"), BootID: "B1", Run: "R1", Grant: "G1"},
		{Type: "session_ended", Time: at("10:05:00"), BootID: "B1", Run: "R1", Grant: "G1", Reason: "vault_changed"},
	}
	ss := Sessions(evs)
	if len(ss) != 1 || ss[0].EndReason != ReasonVaultStateChanged || ss[0].EndInferred {
		t.Fatalf("sessions %+v", ss)
	}
	for in, want := range map[Reason]Reason{"vault_changed": ReasonVaultStateChanged, ReasonRevoked: ReasonRevoked, "": ""} {
		if got := in.Canonical(); got != want {
			t.Errorf("%q.Canonical() = %q, want %q", in, got, want)
		}
	}
}

func TestReauth(t *testing.T) {
	if why, ok := ReasonReauthGatewayRestarted.Reauth(); !ok || why != ReasonGatewayRestarted {
		t.Fatalf("Reauth(%q) = %q %v", ReasonReauthGatewayRestarted, why, ok)
	}
	if string(ReasonReauthVaultStateChanged) != "REAUTH_REQUIRED vault_state_changed" {
		t.Fatalf("%q", ReasonReauthVaultStateChanged)
	}
	if _, ok := ReasonPerCall.Reauth(); ok {
		t.Fatal("per_call read as a re-approval")
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeNone, ModeSession, ModePerCall, ModeDeny} {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := ParseMode("percall"); err == nil {
		t.Error("ParseMode accepted percall")
	}
}
