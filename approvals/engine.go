package approvals

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postern/postern/internal/inventory"
	"github.com/postern/postern/internal/pace"
	"github.com/postern/postern/internal/procid"
)

// A Confirmer asks a person a yes/no question, or for a word typed out
// (an SSH_ASKPASS dialog). An error means the question could not be
// asked, which is never a yes; Word returns "" for a dialog cancelled.
type Confirmer interface {
	Confirm(ctx context.Context, prompt string) (bool, error)
	Word(ctx context.Context, prompt string) (string, error)
}

// Config is what an [Engine] is built from.
type Config struct {
	Procs  *procid.Table
	Log    *slog.Logger // nil discards
	BootID string
	// Vault reports whether the vault is locked and the current epoch.
	Vault func() (locked bool, epoch uint64)
	// Policy is the policy in force at first; see [Engine.SetPolicy].
	Policy *Policy
	// Hosts is the host inventory in force at first; see
	// [Engine.SetHosts]. Nil is empty: no host has a name.
	Hosts *inventory.Inventory
	// Askpass, when set, is shown every card as an extra approver.
	Askpass Confirmer
	// Approvers are the other ways to reach a person with a card (a
	// desktop notification), besides the consoles that attach.
	Approvers []Approver
	// RequireApprover refuses a request at once (no_approver) when no
	// console, askpass or other approver can show its card, instead of
	// letting it wait unseen until the card times out.
	RequireApprover bool
	// ContextFile keeps display context across restarts; "" keeps none.
	ContextFile string
	// Executable is postern's own, which "postern run" runs: a run is
	// restored from the display context only while its process is the
	// child of one (see [Engine.Restore]). Zero: this process's, as the
	// table shows it.
	Executable procid.Exe
	// OnRunEnd is called (without locks held) when a run ends.
	OnRunEnd func(*Run)
	// Audit, when set, receives every authority change and action; an
	// action whose event cannot be recorded is refused. See also
	// [Engine.SetAudit].
	Audit Recorder
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

// Engine is the gateway's Decider and the keeper of runs, grants and
// cards. All its state lives in memory; only display context (Past) is
// written to disk.
//
// Its work is spread by concept: deciding a request (decide.go), asking a
// person on a card (ask.go), applying an answer (answer.go), and the
// lifetimes of runs and grants (lifetime.go, launch.go).
type Engine struct {
	procs       *procid.Table
	log         *slog.Logger
	bootID      string
	vault       func() (locked bool, epoch uint64)
	askpass     Confirmer
	askpassGone atomic.Int64 // when an askpass dialog last went away (unix ns)
	approvers   []Approver
	require     bool
	contextFile string
	executable  procid.Exe
	// pastSaved: Stop wrote the display context for the next gateway, and
	// nothing writes it after (e.mu).
	pastSaved bool
	onRunEnd  func(*Run)
	audit     atomic.Pointer[Recorder]
	clock     func() time.Time
	ownNS     procid.Namespaces // the gateway's own namespaces
	selfPID   int

	policy atomic.Pointer[Policy]
	hosts  atomic.Pointer[inventory.Inventory]

	// epochChanges counts EpochChanged's calls; it moves under mu. A
	// card goes up only if it has not moved since its request read the
	// vault's epoch (ask).
	epochChanges atomic.Uint64

	mu      sync.Mutex
	runs    map[string]*Run
	grants  map[string]*Grant
	bySlot  map[grantSlot][]*Grant // grants by run process, key and destination
	granted map[int]*runGrants     // the run a pid has grants for, and how many
	cards   map[string]*Card
	bySeq   []*Card // the pending cards, by the step they came at (cardfeed.go)
	// cardsEnd is no later than the earliest card_timeout of the
	// pending cards (cardtimeout.go), or zero.
	cardsEnd time.Time
	past     []Past
	cooldown map[string]time.Time // subject key: no card until then (coolLocked)
	coolRoom int                  // the size past which ended cooldowns are dropped
	consoles map[*console]struct{}
	whys     []whyEntry // recent decisions, for WhyFor
	// version is the step of the pending cards' change sequence
	// (cardfeed.go); gone remembers the cards that left after step
	// goneFloor.
	version   uint64
	gone      []goneCard
	goneFloor uint64
	// lastNoApprover is when a request was last refused for want of an
	// approver.
	lastNoApprover time.Time
	changed        chan struct{}
	// refusals paces the records of refusals (refusals.go).
	refusals refusals
	// withdrawn paces the cards withdrawn, by subject (cardbounds.go);
	// e.mu.
	withdrawn *pace.Set[struct{}]
	// denied paces the cards a person denies, by subject (cardbounds.go);
	// e.mu.
	denied *pace.Set[denials]
}

// NewEngine returns an engine with no runs, grants or cards. Display
// context from an earlier gateway is read by [Engine.Restore].
func NewEngine(c Config) *Engine {
	e := &Engine{
		procs:       c.Procs,
		log:         c.Log,
		bootID:      c.BootID,
		vault:       c.Vault,
		askpass:     c.Askpass,
		require:     c.RequireApprover,
		contextFile: c.ContextFile,
		executable:  c.Executable,
		onRunEnd:    c.OnRunEnd,
		clock:       c.Now,
		runs:        map[string]*Run{},
		granted:     map[int]*runGrants{},
		grants:      map[string]*Grant{},
		bySlot:      map[grantSlot][]*Grant{},
		cards:       map[string]*Card{},
		cooldown:    map[string]time.Time{},
		consoles:    map[*console]struct{}{},
		changed:     make(chan struct{}),
		version:     1, // step 0 is an approver's "nothing yet"
		withdrawn:   withdrawnSet(),
		denied:      deniedSet(),
	}
	e.refusals.by = refusalSet()
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.askpass != nil {
		e.approvers = append(e.approvers, askpassApprover{e})
	}
	e.approvers = append(e.approvers, c.Approvers...)
	e.ownNS, _ = procid.OwnNamespaces()
	e.selfPID = os.Getpid()
	if e.clock == nil {
		e.clock = time.Now
	}
	if c.Policy != nil {
		e.SetPolicy(c.Policy)
	}
	e.SetHosts(c.Hosts)
	if c.Audit != nil {
		e.SetAudit(c.Audit)
	}
	return e
}

// SetHosts puts a host inventory in force for the requests decided from
// now on.
func (e *Engine) SetHosts(inv *inventory.Inventory) {
	if inv == nil {
		inv = &inventory.Inventory{}
	}
	e.hosts.Store(inv)
}

// Hosts returns the host inventory in force.
func (e *Engine) Hosts() *inventory.Inventory { return e.hosts.Load() }

// SetAudit sets the audit log: the gateway opens its log after building
// the engine, or later, when "postern vault init" sets one up while it
// runs.
func (e *Engine) SetAudit(r Recorder) { e.audit.Store(&r) }

// recorder returns the audit log, or nil.
func (e *Engine) recorder() Recorder {
	if r := e.audit.Load(); r != nil {
		return *r
	}
	return nil
}

// SetPolicy installs p for the requests decided from now on. Its session
// lifetime applies to the grants in force at once: each ends when it has
// passed since its approval, if that is before the grant's own end.
func (e *Engine) SetPolicy(p *Policy) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.policy.Store(p)
	for _, g := range e.grants {
		e.armExpiryLocked(g, g.expiresUnder(p.Lifetime))
	}
}

// Policy returns the policy in force.
func (e *Engine) Policy() *Policy { return e.policy.Load() }

func (e *Engine) now() time.Time { return e.clock() }

// notify moves the pending cards' change sequence on by one step and wakes
// approvers waiting for the card list to change; e.mu held.
func (e *Engine) notify() {
	e.version++
	close(e.changed)
	e.changed = make(chan struct{})
}
