package journal

import (
	"sort"
	"testing"
	"time"
)

func TestStatusTable(t *testing.T) {
	now := time.Now()
	end := func(outcome string) *End { return &End{At: now, Outcome: outcome} }
	unknown := &Unknown{At: now, Reason: ReasonUpstreamLost, LastPhase: PhaseDispatched}
	res := func(results ...string) []Resolution {
		var rs []Resolution
		for _, r := range results {
			rs = append(rs, Resolution{At: now, By: ByUser, Result: r})
		}
		return rs
	}
	cases := []struct {
		name string
		e    Entry
		want string
	}{
		{"started", Entry{}, StatusRunning},
		{"dispatched", Entry{Dispatched: now}, StatusRunning},
		{"exited", Entry{End: end(OutcomeExited)}, StatusCompleted},
		{"signaled", Entry{End: end(OutcomeSignaled)}, StatusCompleted},
		{"closed without status (earlier versions)", Entry{End: end(OutcomeClosedNoStatus)}, StatusUnknown},
		{"rejected", Entry{End: end(OutcomeRejected)}, StatusRetrySafe},
		{"denied", Entry{End: end(OutcomeDenied)}, StatusRetrySafe},
		{"failed to start", Entry{End: end(OutcomeFailedToStart)}, StatusRetrySafe},
		{"unknown", Entry{Unknown: unknown}, StatusUnknown},
		{"resolved ran", Entry{Unknown: unknown, Resolutions: res(ResultRan)}, StatusCompleted},
		{"resolved not started", Entry{Unknown: unknown, Resolutions: res(ResultNotStarted)}, StatusRetrySafe},
		{"still running", Entry{Unknown: unknown, Resolutions: res(ResultStillRunning)}, StatusUnknown},
		{"inconclusive", Entry{Unknown: unknown, Resolutions: res(ResultInconclusive)}, StatusUnknown},
		{"last one counts", Entry{Unknown: unknown, Resolutions: res(ResultStillRunning, ResultRan)}, StatusCompleted},
		{"corrected", Entry{Unknown: unknown, Resolutions: res(ResultNotStarted, ResultInconclusive)}, StatusUnknown},
	}
	for _, c := range cases {
		if got := c.e.Status(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]string{
		"running": StatusRunning, "COMPLETED": StatusCompleted, "retry_safe": StatusRetrySafe,
		"RETRY_SAFE previous_action_not_started": StatusRetrySafe, "unknown": StatusUnknown,
		"status_unknown inspect_activity_journal": StatusUnknown, " STATUS_UNKNOWN ": StatusUnknown,
	} {
		if got, ok := ParseStatus(in); !ok || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v", in, got, ok)
		}
	}
	if _, ok := ParseStatus("done"); ok {
		t.Error("ParseStatus accepted done")
	}
}

func TestIDs(t *testing.T) {
	var ids []string
	for range 1000 {
		ids = append(ids, NewID())
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids made in a row are not increasing")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !ValidID(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	var g idGenerator
	at := time.Date(2026, 3, 1, 10, 0, 0, 5e6, time.UTC)
	id := g.next(at)
	got, err := IDTime(id)
	if err != nil || !got.Equal(at) {
		t.Fatalf("IDTime(%s) = %v, %v", id, got, err)
	}
	// The clock stepping back does not make ids go backwards.
	if back := g.next(at.Add(-time.Hour)); back <= id {
		t.Fatalf("id after a clock step back %s <= %s", back, id)
	}
	// Nor does the random part running out within a millisecond.
	g.hi, g.lo = 1<<16-1, 1<<64-1
	if next := g.next(at); next <= id {
		t.Fatalf("id after the random part ran out %s <= %s", next, id)
	}
	for _, bad := range []string{"", "01M8N7K5YANAXYX35XDKKVHY1", "81M8N7K5YANAXYX35XDKKVHY1R", "01M8N7K5YANAXYX35XDKKVHY1I", "01m8n7k5yanaxyx35xdkkvhy1r", "../../../../../../etc/pass"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
	if enc := encodeID(1<<48-1, 1<<16-1, 1<<64-1); enc != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("largest id %s", enc)
	}
}
