package approvals

import (
	"slices"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/procid"
)

// The engine remembers its recent decisions, in memory only, so that a
// program whose ssh or git failed can ask why ("postern why"): display
// context, never an input to a decision.

// whyKeep is how many recent decisions the engine remembers.
const whyKeep = 128

// Why is what the gateway last decided for a caller, as "postern why"
// prints it. Outcome is in the words of the outcomes the gateway reports:
// ALLOWED, WAITING, DENIED <reason>, REAUTH_REQUIRED <what changed>, or
// STATUS_UNKNOWN inspect_activity_journal.
type Why struct {
	Time        time.Time    `json:"time"`
	Outcome     string       `json:"outcome"`
	Allowed     bool         `json:"allowed"`
	Reason      audit.Reason `json:"reason,omitempty"`
	Mode        audit.Mode   `json:"mode,omitempty"`
	Card        string       `json:"card,omitempty"`
	Run         string       `json:"run,omitempty"`
	Journal     string       `json:"journal_entry,omitempty"`
	Key         string       `json:"key,omitempty"`
	Destination string       `json:"destination,omitempty"` // the verified host key's fingerprint
	// DestinationNames and DestinationClasses are what the host
	// inventory called the destination when the request was decided, as
	// its card named it.
	DestinationNames   []string `json:"destination_names,omitempty"`
	DestinationClasses []string `json:"destination_classes,omitempty"`
	Namespace          string   `json:"namespace,omitempty"` // an SSHSIG signature's namespace, whole
	Requester          string   `json:"requester,omitempty"` // the requesting chain
	// Because says why the policy gave the mode of a decision it made
	// without a person (policy_deny, policy_none), as postern check does,
	// or why it asked a person on this call (per-call), as the card did.
	Because string `json:"because,omitempty"`
	// Explain says what happened; Next, what a program that was refused
	// should do (usually: stop and tell its person).
	Explain string `json:"explain"`
	Next    string `json:"next"`
}

// whyEntry is one remembered decision, with what identifies who it was
// for.
type whyEntry struct {
	why     Why
	channel Channel
	chain   []procKey // the requester and its ancestors, when known
	seq     uint64    // a card's entry is replaced by its decision
}

type procKey struct {
	pid   int
	start uint64
}

func keysOf(c procid.Chain) []procKey {
	out := make([]procKey, len(c))
	for i := range c {
		out[i] = procKey{c[i].PID, c[i].StartTicks}
	}
	return out
}

// noteWhy remembers d for r; chain may be nil. card replaces the
// waiting entry of the same card.
func (e *Engine) noteWhy(r *Request, d Decision, waiting bool, chain procid.Chain) {
	ent := e.whyEntryOf(r, d, waiting, chain)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keepWhyLocked(ent)
}

// whyEntryOf is what noteWhy remembers of d for r.
func (e *Engine) whyEntryOf(r *Request, d Decision, waiting bool, chain procid.Chain) whyEntry {
	w := Why{
		Time: e.now().UTC(), Allowed: d.Allow, Reason: d.Reason, Mode: d.Mode,
		Card: d.Card, Run: d.Run, Journal: r.RetryEntry, Key: r.Key.Fingerprint,
		Because: d.because,
	}
	if r.Key.Comment != "" {
		w.Key += " (" + r.Key.Comment + ")"
	}
	if w.Run == "" {
		w.Run = r.Channel.Run
	}
	if r.Dest != nil {
		w.Destination = r.Dest.Fingerprint()
		inv := e.inventoryOf(r)
		w.DestinationNames, w.DestinationClasses = inv.names, inv.classes
	}
	if r.Purpose == PurposeSSHSig {
		w.Namespace = r.Namespace
	}
	if chain != nil {
		w.Requester = ChainText(chain)
	}
	w.Outcome, w.Explain, w.Next = explain(d, waiting, r.RetryEntry)
	ent := whyEntry{why: w, channel: r.Channel, chain: keysOf(chain)}
	if len(ent.chain) == 0 && r.Requester != nil {
		ent.chain = []procKey{{r.Requester.PID, r.Requester.StartTicks}}
	}
	return ent
}

// keepWhyLocked remembers ent, in place of the entry of the same card.
// The caller holds e.mu.
func (e *Engine) keepWhyLocked(ent whyEntry) {
	if card := ent.why.Card; card != "" {
		e.whys = slices.DeleteFunc(e.whys, func(x whyEntry) bool { return x.why.Card == card })
	}
	e.whys = append(e.whys, ent)
	if len(e.whys) > whyKeep {
		e.whys = slices.Delete(e.whys, 0, len(e.whys)-whyKeep)
	}
}

// explain words a decision in the gateway's outcomes, says what happened
// and what to do.
func explain(d Decision, waiting bool, journal string) (outcome, what, next string) {
	const tell = " Stop and tell your user; do not retry on your own."
	switch {
	case waiting:
		return "WAITING " + d.Card, "Card " + d.Card + " is waiting for the user's answer.",
			`Tell your user to answer card ` + d.Card + ` (in "postern approve" or the desktop notification); the request continues once they do.`
	case d.Allow:
		return "ALLOWED", "The request was allowed (" + string(d.Reason) + ").", "Nothing to do."
	case journal != "" && d.Reason != audit.ReasonVaultLocked:
		return journalUnknown, "An identical command sent before (journal entry " + journal + ") has an unknown outcome, and the retry was not approved (" + string(d.Reason) + ").",
			`Do not retry. Tell your user: "postern journal show ` + journal + `" says what is known; they check the host and resolve the entry.`
	}
	if why, ok := d.CardReason.Reauth(); ok {
		return string(d.CardReason), reauthEnded(why) + " The approval asked for now was not given (" + string(d.Reason) + ").",
			"Ask your user to approve again." + tell
	}
	out := "DENIED " + string(d.Reason)
	switch d.Reason {
	case audit.ReasonNoApprover:
		return out, "No approver could show the card: no \"postern approve\" console is attached, no desktop notification service and no askpass.",
			`Ask your user to run "postern approve" in another terminal, then retry once.`
	case audit.ReasonTimeout:
		return out, "Nobody answered the card " + d.Card + " in time.", "Ask your user to watch for the card, then retry once." + tell
	case audit.ReasonCooldown:
		return out, "An earlier card went unanswered, or your user denied this run's cards in quick succession, or this run withdrew requests while their cards were up too often, so its requests are refused for a while without a card.", "Wait, then ask your user." + tell
	case audit.ReasonCardLimit:
		return out, "This run already has as many cards waiting for your user as it may.", "Wait for your user to answer them, then retry once." + tell
	case audit.ReasonDenied:
		return out, "Your user denied the request on card " + d.Card + ".", "Do not retry. Ask your user what they want."
	case audit.ReasonPolicyDeny:
		return out, "The policy refuses this use of the key.", "Do not retry: it will be refused again." + tell
	case audit.ReasonVaultLocked:
		return out, "The vault is locked: nothing is signed.", `Ask your user to run "postern unlock".`
	case audit.ReasonVaultStateChanged:
		return "REAUTH_REQUIRED " + string(d.Reason), "The vault was locked or unlocked while the card waited.", "Ask your user to approve again." + tell
	case audit.ReasonAuditFailed:
		return out, "The audit log could not record the request, so it was refused: nothing is allowed while the log cannot be written (a full disk, an I/O error). The gateway tries the log again and allows actions once it can.",
			`Ask your user: "postern status" says why the audit log fails.` + tell
	case audit.ReasonOutOfResources:
		return out, "The gateway ran out of file descriptors or memory and could not check the process that asked against live evidence, so nothing was signed. Any approval stands.",
			"Retry once; if it is refused again, ask your user to look at the gateway's log." + tell
	case audit.ReasonCanceled:
		return out, "The request went away before your user answered its card: the process that asked hung up or exited, and the card was withdrawn.",
			"Retry once, and let the request wait for the answer: a run that withdraws its cards often has its requests refused for a while without one."
	case audit.ReasonIdentityMismatch:
		return out, "The process that asked is no longer the one that connected: it ran another program (or another process has its pid), before its signature or while its card waited. Nothing is signed for it.",
			"Do not retry from a process that changes: let the program that asks (ssh, git) wait for the answer." + tell
	case audit.ReasonHostKeyRevoked:
		return out, "The destination's host key is marked revoked.", "Do not retry." + tell
	}
	return out, "The request was refused (" + string(d.Reason) + ").", tell[1:]
}

// journalUnknown is the outcome of a command whose earlier identical
// command's outcome is unknown (the bastion's journal status).
const journalUnknown = "STATUS_UNKNOWN inspect_activity_journal"

// WhyFor returns what the engine last decided for caller. A caller that
// came through a run's socket (run != "") sees that run's decisions
// only. Otherwise the decision chosen is the one whose requester is
// closest to the caller: the requester or one of its ancestors is the
// caller's nearest ancestor among all remembered (init and processes of
// other users excluded). ok is false when nothing matches.
func (e *Engine) WhyFor(caller *procid.Peer, run string) (Why, bool) {
	var mine []procKey
	if run == "" {
		chain := append(procid.Chain{caller.Process}, caller.Ancestors()...)
		for _, p := range chain {
			if p.PID <= 1 || p.UID != caller.UID {
				break
			}
			mine = append(mine, procKey{p.PID, p.StartTicks})
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	best, bestDepth := -1, len(mine)
	for i := len(e.whys) - 1; i >= 0; i-- {
		ent := &e.whys[i]
		if run != "" {
			if ent.channel.Run == run || ent.why.Run == run {
				return ent.why, true
			}
			continue
		}
		for d, k := range mine {
			if d < bestDepth && slices.Contains(ent.chain, k) {
				best, bestDepth = i, d
				break
			}
		}
	}
	if best < 0 {
		return Why{}, false
	}
	return e.whys[best].why, true
}

// reauthEnded says why a re-approval card was asked, by what ended the
// approval before it: a process_changed card is for a new process (the
// approved one ended and this one has its executable or label, or it
// executed another program on its pid), which had no approval of its
// own to end.
func reauthEnded(what audit.Reason) string {
	switch what {
	case audit.ReasonProcessChanged:
		return "This is a new process: an approval given to an earlier one (which ended, or executed another program) does not cover it."
	case audit.ReasonGatewayRestarted:
		return "The gateway restarted, which ended the approvals given before."
	case audit.ReasonVaultStateChanged:
		return "The vault was locked or changed, which ended the approval given before."
	}
	return "An earlier approval ended (" + string(what) + ")."
}
