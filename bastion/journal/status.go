package journal

import "strings"

// Statuses, as users, the CLI and JSON see them. Every entry has exactly
// one; see the table in the package documentation.
const (
	StatusRunning   = "RUNNING"
	StatusCompleted = "COMPLETED"
	StatusRetrySafe = "RETRY_SAFE previous_action_not_started"
	StatusUnknown   = "STATUS_UNKNOWN inspect_activity_journal"
)

// Status returns the entry's status:
//
//	End: rejected, denied or failed_to_start    RETRY_SAFE previous_action_not_started
//	End: exited or signaled                     COMPLETED
//	Unknown (or End closed_no_status, which
//	  earlier versions wrote), and:
//	  the last resolution ran                   COMPLETED
//	  the last resolution not_started           RETRY_SAFE previous_action_not_started
//	  no resolution, or the last one
//	    still_running or inconclusive           STATUS_UNKNOWN inspect_activity_journal
//	neither End nor Unknown                     RUNNING
//
// RUNNING only lasts while the instance that started the command holds
// the journal: Open turns the RUNNING entries of earlier instances into
// unknown ones, and OpenReadOnly shows them as unknown.
func (e *Entry) Status() string {
	switch {
	case e.End != nil && !e.Lost():
		switch e.End.Outcome {
		case OutcomeRejected, OutcomeDenied, OutcomeFailedToStart:
			return StatusRetrySafe
		}
		return StatusCompleted
	case e.Lost():
		if n := len(e.Resolutions); n > 0 {
			switch e.Resolutions[n-1].Result {
			case ResultRan:
				return StatusCompleted
			case ResultNotStarted:
				return StatusRetrySafe
			}
		}
		return StatusUnknown
	}
	return StatusRunning
}

// ParseStatus accepts a status in full or by its first word, in any case
// ("completed", "RETRY_SAFE", "status_unknown", "unknown"), and returns
// the full form.
func ParseStatus(s string) (string, bool) {
	s = strings.TrimSpace(s)
	u := strings.ToUpper(s)
	for _, st := range []string{StatusRunning, StatusCompleted, StatusRetrySafe, StatusUnknown} {
		if first, _, _ := strings.Cut(st, " "); strings.EqualFold(s, st) || u == first {
			return st, true
		}
	}
	switch u {
	case "UNKNOWN":
		return StatusUnknown, true
	case "RETRY-SAFE", "RETRYSAFE":
		return StatusRetrySafe, true
	}
	return "", false
}

// Lost reports whether e's outcome was not observed: it is unknown, or
// ended closed_no_status, which earlier versions wrote of a channel the
// host closed without an exit status or signal (now unknown, no_status).
// Such an entry takes resolutions.
func (e *Entry) Lost() bool {
	return e.Unknown != nil || e.End != nil && e.End.Outcome == OutcomeClosedNoStatus
}
