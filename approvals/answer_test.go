package approvals

import "testing"

func TestParseVerdict(t *testing.T) {
	for _, v := range []Verdict{VerdictDeny, VerdictOnce, VerdictSession} {
		if got, err := ParseVerdict(v.String()); err != nil || got != v {
			t.Errorf("ParseVerdict(%q) = %v, %v", v.String(), got, err)
		}
	}
	for _, bad := range []string{"", "yes", "Once", "verdict(0)"} {
		if v, err := ParseVerdict(bad); err == nil {
			t.Errorf("ParseVerdict(%q) = %v", bad, v)
		}
	}
}

// An answer without a verdict denies, whoever gives it.
func TestZeroVerdictDenies(t *testing.T) {
	w := newWorld(t)
	ch := w.decide(w.req(13))
	if err := w.e.Answer(w.card().ID, Answer{Subject: -1, Approver: "test"}, w.f.Peer(30)); err != nil {
		t.Fatal(err)
	}
	if d := got(t, ch); d.Allow || d.Reason != "denied" {
		t.Fatalf("zero verdict: %+v", d)
	}
}
