package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/internal/atomicfile"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/smallfile"
)

// Past is display context about an earlier grant or run: enough to tell
// an approver what changed ("the gateway restarted", "the approved process
// exited and this is a new one"). It is never turned back into authority:
// nothing in it is checked when a request is decided.
type Past struct {
	BootID    string       `json:"boot_id"`
	Run       string       `json:"run"`
	Label     string       `json:"label,omitempty"`
	PID       int          `json:"pid"`
	Start     uint64       `json:"start_ticks"`
	Exe       string       `json:"exe"`
	ExeHash   string       `json:"exe_sha256"`
	ExeDev    uint64       `json:"exe_dev"`
	ExeIno    uint64       `json:"exe_ino"`
	Key       string       `json:"key,omitempty"`
	Dest      string       `json:"dest,omitempty"`
	DestNames []string     `json:"dest_names,omitempty"`
	Reason    audit.Reason `json:"reason"`
	Ended     time.Time    `json:"ended"`
	// Socket is the agent socket of a run launched by "postern run" that
	// was still alive when its gateway stopped.
	Socket string `json:"socket,omitempty"`
	// Confinement and NS are the run's, kept with its socket.
	Confinement confine.Level     `json:"confinement,omitzero"`
	NS          procid.Namespaces `json:"namespaces,omitzero"`
	// LauncherSession is the terminal session "postern run" launched the
	// run from: answers from it stay refused after a restart.
	LauncherSession int `json:"launcher_session,omitempty"`
	// Layout is where the process's program was placed: an exec, even
	// of the same executable, places it anew.
	Layout procid.Layout `json:"layout,omitzero"`
}

// forgetSocketLocked drops the display context's entries of the run to
// serve again at sock: a run is restored from what the gateway that
// registered it or stopped last left of it, as long as the run has not
// ended since; e.mu held.
func (e *Engine) forgetSocketLocked(sock string) {
	if sock == "" {
		return
	}
	// Such an entry names no key: it was kept only to serve the run again.
	e.past = slices.DeleteFunc(e.past, func(p Past) bool { return p.Socket == sock })
}

// serveAgainLocked keeps live run, launched by "postern run", in the
// display context as a run for the next gateway to serve again (Restore),
// in place of what was kept of it, with reason and at (none while this
// gateway runs); e.mu held.
func (e *Engine) serveAgainLocked(run *Run, reason audit.Reason, at time.Time) {
	e.forgetSocketLocked(run.Socket)
	p := pastOf(e.bootID, run, nil, reason, at)
	p.Socket = run.Socket
	e.past = append(e.past, p)
}

// maxPast bounds the ended sessions the display context keeps.
const maxPast = 64

// MaxRuns bounds the runs the gateway keeps at once (prepared, started or
// approved): each holds descriptors (its socket, its process's pins) that
// no shedding of idle connections frees. The display context keeps as
// many runs to serve again after a restart (an entry with a socket),
// apart from the maxPast ended sessions it keeps, so that no live run is
// forgotten for other sessions having ended.
const MaxRuns = 256

// trimPast keeps of ps, in their order, its last MaxRuns entries that name
// a run to serve again and its last maxPast other entries. It reuses ps's
// array: the caller keeps only what it returns.
func trimPast(ps []Past) []Past {
	// The first entry of each kind that is kept.
	firstRun, firstEnded := len(ps), len(ps)
	runs, ended := 0, 0
	for i := len(ps) - 1; i >= 0 && (runs < MaxRuns || ended < maxPast); i-- {
		if ps[i].Socket != "" && runs < MaxRuns {
			firstRun, runs = i, runs+1
		} else if ps[i].Socket == "" && ended < maxPast {
			firstEnded, ended = i, ended+1
		}
	}
	if runs+ended == len(ps) {
		return ps
	}
	out := ps[:0]
	for i, p := range ps {
		if p.Socket != "" && i >= firstRun || p.Socket == "" && i >= firstEnded {
			out = append(out, p)
		}
	}
	clear(ps[len(out):])
	return out
}

func pastOf(bootID string, r *Run, g *Grant, reason audit.Reason, now time.Time) Past {
	p := Past{
		BootID: bootID, Run: r.ID, Label: r.Label, PID: r.Process.PID, Start: r.Process.StartTicks,
		Exe: r.Process.Exe.Path, ExeHash: r.Process.Exe.Hash(), ExeDev: r.Process.Exe.Dev, ExeIno: r.Process.Exe.Ino, Layout: r.Process.Layout,
		Reason: reason, Ended: now, Confinement: r.Confinement, NS: r.NS, LauncherSession: r.launcherSession(),
	}
	if g != nil {
		p.Key, p.Dest, p.DestNames = g.Key.Fingerprint, g.scope().dest, g.scope().names
	}
	return p
}

// maxPastFile bounds the display-context file read: far above what
// maxPast entries take.
const maxPastFile = 16 << 20

// loadPast reads the display context an earlier gateway left.
func loadPast(file string) ([]Past, error) {
	if file == "" {
		return nil, nil // none kept
	}
	b, err := smallfile.Read(file, maxPastFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodePast(b)
}

// decodePast decodes the display context's JSON array, as json.Unmarshal
// would, keeping only what trimPast keeps of it as it goes: a file of
// maxPastFile bytes of "{}," would otherwise be millions of entries, some
// gigabytes, before they were cut.
func decodePast(b []byte) ([]Past, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	var ps []Past
	switch tok {
	case nil: // null: none kept
	case json.Delim('['):
		ps = []Past{}
		var p Past // one, decoded into again and again: each would escape
		for dec.More() {
			p = Past{}
			if err := dec.Decode(&p); err != nil {
				return nil, err
			}
			if ps = append(ps, p); len(ps) >= 2*(MaxRuns+maxPast) {
				ps = trimPast(ps)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing ']'
			return nil, err
		}
		ps = trimPast(ps)
	default:
		return nil, fmt.Errorf("the display context is a JSON %v, not an array", tok)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("the display context has data after its array: %v", err)
	}
	return ps, nil
}

// savePast writes the display context (temp file, rename).
func savePast(file string, ps []Past) error {
	if file == "" {
		return nil
	}
	b, err := json.MarshalIndent(trimPast(slices.Clone(ps)), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(file, b, 0o600)
}

// approvedBefore reports whether this gateway granted key to process p
// (the same pid and start time) before. Only its own grants count: the
// display context an earlier gateway left is a file of the user's, and
// one rewritten to name the person's login shell would have the first
// card after a restart preselect it, so that a key press approved a
// session for every program the person starts.
func (e *Engine) approvedBefore(p *procid.Process, key Key) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.past {
		if q := &e.past[i]; q.BootID == e.bootID && q.Key == key.Fingerprint && q.PID == p.PID && q.Start == p.StartTicks {
			return true
		}
	}
	return false
}

// SentenceGatewayRestarted is what a card says of a run served again
// after a gateway restart that has no approval of the key since.
const SentenceGatewayRestarted = "The gateway restarted. Approve this newly connected process to use this key."

// reauth explains why a card for subject and key is a re-approval, from
// display context only. It returns the card reason and a sentence. What
// ended the subject's own latest approval of key says what changed; a run
// served again after a restart whose process had none of key is told it
// is asked because the gateway restarted. The sentence names neither the
// key nor the destination: the card's question does, on its first line.
func (e *Engine) reauth(subject *Run, key Key) (reason audit.Reason, sentence string) {
	e.mu.Lock()
	past := append([]Past(nil), e.past...)
	e.mu.Unlock()
	restarted := func() (audit.Reason, string) {
		return audit.ReasonReauthGatewayRestarted, SentenceGatewayRestarted
	}
	same := func(p *Past) bool { return p.PID == subject.Process.PID && p.Start == subject.Process.StartTicks }
	for i := len(past) - 1; i >= 0; i-- {
		p := &past[i]
		if p.Key != key.Fingerprint || !same(p) {
			continue
		}
		switch {
		case p.Reason == audit.ReasonProcessChanged && p.BootID == e.bootID:
			return audit.ReasonReauthProcessChanged, "The approved process (" + pastWho(p) + ") executed another program on the same pid, so it is a new process" + nowName(subject.Process.Name()) + ": approve it to use this key."
		case p.BootID != e.bootID:
			return restarted()
		case p.Reason == audit.ReasonVaultLocked || p.Reason.Canonical() == audit.ReasonVaultStateChanged:
			return audit.ReasonReauthVaultStateChanged, "The vault was locked or changed after the earlier approval, and unlocking it did not restore that approval. Approve this process again to use this key."
		}
		// Ended in this gateway otherwise (revoked, expired): nothing
		// changed of the process, and an earlier approval says nothing
		// of why it is asked now.
		return audit.ReasonCardNew, ""
	}
	if subject.PrevBoot != "" {
		return restarted()
	}
	for i := len(past) - 1; i >= 0; i-- {
		p := &past[i]
		if p.Key != key.Fingerprint || same(p) {
			continue
		}
		sameLabel := p.Label != "" && p.Label == subject.Label
		sameExe := p.ExeHash != "" && p.ExeHash == subject.Process.Exe.Hash()
		if sameLabel || sameExe {
			what := "executable"
			if sameLabel {
				what = "label"
			}
			return audit.ReasonReauthProcessChanged, "The approved process (" + pastWho(p) + ") ended" + endWord(p.Reason) + ". This is a new process with the same " + what + ": approve it to use this key."
		}
	}
	return audit.ReasonCardNew, ""
}

// A sentence of the gateway names a process only by a plain name: a name
// the requester chose that is not a plain word (it holds a space, a
// parenthesis, a quote, a control character…) would write the sentence
// on ("evil, pid 10) did nothing. Nothing changed: …"). The card's run
// line shows every name, quoted.

// plainName is s when it is a plain word of at most 64 letters, digits
// and ".+-_@", else "".
func plainName(s string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".+-_@", c)) {
			return ""
		}
	}
	return s
}

// pastWho names an approved process in a sentence: its executable's name
// when plain, and its pid.
func pastWho(p *Past) string {
	if n := plainName(baseName(p.Exe)); n != "" {
		return n + ", pid " + itoa(p.PID)
	}
	return "pid " + itoa(p.PID)
}

// endWord is " (REASON)" for an end reason of the vocabulary, else "":
// the display context is a file a program with the person's uid can
// write, and a card's sentence says only the gateway's own words.
func endWord(r audit.Reason) string {
	if !r.IsEnd() {
		return ""
	}
	return " (" + string(r.Canonical()) + ")"
}

// nowName is " (now NAME)" for a plain name, else "".
func nowName(name string) string {
	if n := plainName(name); n != "" {
		return " (now " + n + ")"
	}
	return ""
}
