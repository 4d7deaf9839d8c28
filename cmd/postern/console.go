package main

// The full-screen console: "postern approve" on a terminal. Three tabs —
// the pending cards (with the requesting chain, the verified destination,
// what an answer covers, age and countdown, and the recent decisions),
// the live runs and grants (revoke), and the journal entries whose
// outcome is unknown (resolve). It follows the gateway through restarts
// and says so. The rules for answering a card are in console_prompt.go.

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
)

// armDelay is how long a card is on screen, with no key pressed, before
// a key can answer it: each key pressed before that starts the wait
// again, so that a program typing into the terminal without a pause
// never answers a card.
const armDelay = 500 * time.Millisecond

// refreshEvery is how often the runs, grants and journal are read again.
const refreshEvery = 2 * time.Second

// journalShown is how many of the journal's unknown entries the journal
// tab lists, the newest; it says when there are more.
const journalShown = 20

type tab int

const (
	tabCards tab = iota
	tabRuns
	tabJournal
)

// Messages of the console.
type (
	cardsMsg []api.Card
	// connMsg is the state of the connection to the gateway; a change
	// that matters (lost, back, restarted) is also a line of Recent.
	connMsg struct {
		text   string
		recent bool
	}
	tickMsg    time.Time
	refreshMsg struct {
		sessions *api.SessionsResult
		unknown  []*api.JournalEntry
		// moreUnknown: the journal holds more unknown entries than
		// unknown, the newest journalShown.
		moreUnknown bool
		// jrnlErr says why the journal could not be read, for its tab;
		// sessErr, why the runs and grants could not be.
		jrnlErr, sessErr string
	}
	// doneMsg is an answer, revocation or resolution, or its error;
	// card is the card of an answer that failed, entry the journal entry
	// of a resolution that failed.
	doneMsg struct {
		text   string
		failed bool
		card   string
		entry  string
	}
)

type consoleModel struct {
	gw      *api.Client
	flush   func() // discards the terminal's pending input
	cards   []api.Card
	sel     int
	prompts map[string]*cardPrompt
	shownID string
	shownAt time.Time // when the wait to arm the card (or entry) began
	armed   bool      // the card has waited armDelay with no key pressed
	entryID string    // the journal entry under the cursor, armed as a card
	// entryGone is that entry when it went away, until a key is
	// pressed (console_journal.go).
	entryGone string
	// runID is the row of the runs tab under the cursor, which the
	// cursor follows through refreshes; runGone is that row when it went
	// away, until a key is pressed (console_runs.go).
	runID, runGone string
	// gone is the card that was under the cursor when it went away
	// (answered elsewhere, timed out, withdrawn), until a key is pressed:
	// that key was meant for it, and answers no other card. A card this
	// console answered, a run or grant it revoked, or a journal entry it
	// resolved (sent), is not gone so, unless that answer fails
	// (sentGone).
	gone string
	sent string
	// sentGone is the card (or journal entry) under the cursor that
	// went away while its answer (or resolution) from this console was
	// on its way: gone as above (or as entryGone) if that fails.
	sentGone string
	note     string
	recent   []string
	conn     string
	tab      tab
	row      int
	refresh  refreshMsg
	reloaded time.Time
	width    int
	height   int
	now      time.Time
}

func newConsoleModel(gw *api.Client, flush func()) *consoleModel {
	return &consoleModel{gw: gw, flush: flush, prompts: map[string]*cardPrompt{}, conn: "connecting…", now: time.Now()}
}

func (m *consoleModel) Init() tea.Cmd {
	return tea.Batch(tick(), m.reload())
}

func tick() tea.Cmd {
	return tea.Tick(250*time.Millisecond, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// journalTrouble says, for the journal's tab, why it could not be read:
// a gateway without a bastion keeps none, and any other error (a damaged
// journal) is shown as it is.
func journalTrouble(err error) string {
	switch {
	case err == nil:
		return ""
	case api.HasCode(err, api.CodeNoBastion):
		return "the bastion is not enabled: no command journal"
	}
	return "the command journal cannot be read: " + safetext.Field(err.Error(), safetext.Line)
}

// reload reads the runs, grants and unknown journal entries.
func (m *consoleModel) reload() tea.Cmd {
	gw := m.gw
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var r refreshMsg
		var err error
		if r.sessions, err = gw.Sessions(ctx); err != nil {
			r.sessErr = "the runs and grants cannot be read: " + safetext.Field(err.Error(), safetext.Line)
		}
		// One more than is listed tells whether there are more.
		es, err := gw.JournalPage(ctx, api.JournalArgs{Status: "STATUS_UNKNOWN", Limit: journalShown + 1})
		if len(es) > journalShown {
			es, r.moreUnknown = es[:journalShown], true
		}
		r.unknown, r.jrnlErr = es, journalTrouble(err)
		return r
	}
}

func (m *consoleModel) current() *api.Card {
	if m.sel < 0 || m.sel >= len(m.cards) {
		return nil
	}
	return &m.cards[m.sel]
}

func (m *consoleModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		m.now = time.Time(msg)
		var cmd tea.Cmd
		if m.now.Sub(m.reloaded) >= refreshEvery {
			m.reloaded = m.now
			cmd = m.reload()
		}
		return m, tea.Batch(tick(), cmd)
	case refreshMsg:
		m.refresh = msg
		m.followRow()
		m.followEntry()
	case cardsMsg:
		m.setCards(msg)
	// What the gateway or a failure says may hold words from elsewhere
	// (see diagnostic).
	case connMsg:
		m.conn = safetext.Terminal(msg.text)
		if msg.recent {
			m.recentAdd(m.conn)
		}
	case doneMsg:
		m.note = safetext.Terminal(msg.text)
		m.recentAdd(m.note)
		if msg.failed {
			if m.sent == msg.card {
				m.sent = ""
			}
			if msg.card != "" && msg.card == m.sentGone {
				// The person, told it failed, may answer again: that
				// key is meant for the card that went.
				m.gone, m.sentGone = msg.card, ""
				m.note += "; " + goneNote(msg.card, m.current())
			}
			m.startOver(msg.card)
		}
		if msg.entry != "" && msg.entry == m.sentGone {
			m.entryGone, m.sentGone = msg.entry, ""
			m.note += "; " + entryGoneNote(msg.entry, m.refresh.unknown, m.row)
		}
		return m, m.reload()
	case tea.KeyPressMsg:
		return m.key(msg.String())
	}
	return m, nil
}

// setCards takes a new card list, keeping the selection on the same card
// when it is still there. A card newly on screen is armed only after
// armDelay, and the terminal's pending input is discarded. When the
// selected card went away, the screen says so, and the next key, which
// the person may have meant for it, answers no card (key); when it went
// while this console's answer to it was on its way, so it does once that
// answer fails.
func (m *consoleModel) setCards(cards []api.Card) {
	id := ""
	if c := m.current(); c != nil {
		id = c.ID
	}
	m.cards, m.sel = cards, 0
	live := map[string]bool{}
	for i, c := range cards {
		live[c.ID] = true
		if c.ID == id {
			m.sel = i
		}
		if m.prompts[c.ID] == nil {
			m.prompts[c.ID] = newCardPrompt(c)
		}
	}
	for id := range m.prompts {
		if !live[id] {
			delete(m.prompts, id)
		}
	}
	switch {
	case id == "" || live[id]:
	case id != m.sent:
		m.gone = id
		m.note = goneNote(id, m.current())
	default:
		m.sentGone = id
	}
	m.showSelected()
}

// goneNote says that card id, which was under the cursor, is no longer
// pending, and which card is there now.
func goneNote(id string, now *api.Card) string {
	s := "card " + id + " is no longer pending (answered elsewhere, timed out or withdrawn)"
	if now != nil {
		s += ": card " + now.ID + " is under the cursor now, read it"
	}
	return s
}

// showSelected notes when the selected card came on screen, and arms
// it anew when it is another card than the one shown.
func (m *consoleModel) showSelected() {
	c := m.current()
	if c == nil || c.ID == m.shownID {
		return
	}
	m.shownID = c.ID
	m.rearm()
}

// rearm starts the selected card's wait before it takes a key again and
// discards the terminal's pending input: for a card newly on screen, for
// the cards tab shown again, and after an answer that was not applied.
func (m *consoleModel) rearm() {
	m.shownAt, m.armed = time.Now(), false
	if m.flush != nil {
		m.flush()
	}
}

// arm reports whether the selected card takes a key pressed now: once it
// has waited armDelay since it was shown with no key pressed, it does
// until it is armed anew; a key before that starts the wait again.
func (m *consoleModel) arm() bool {
	now := time.Now()
	if !m.armed && now.Sub(m.shownAt) >= armDelay {
		m.armed = true
	}
	if !m.armed {
		m.shownAt = now
	}
	return m.armed
}

// startOver follows an answer to card id that was not applied: the card
// is asked afresh (what was typed for it forgotten) and armed anew, and
// the terminal's pending input is discarded.
func (m *consoleModel) startOver(id string) {
	if p := m.prompts[id]; p != nil {
		m.prompts[id] = newCardPrompt(p.card)
	}
	if c := m.current(); c != nil && c.ID == id {
		m.rearm()
	} else if m.flush != nil {
		m.flush()
	}
}

func (m *consoleModel) recentAdd(s string) {
	m.recent = append(m.recent, time.Now().Format("15:04:05")+"  "+s)
	if len(m.recent) > 6 {
		m.recent = m.recent[len(m.recent)-6:]
	}
}

// showTab shows tab t; the cards tab, and the journal tab whose keys
// resolve entries, shown again arm their card or entry anew, so that keys
// typed for another tab never answer it.
func (m *consoleModel) showTab(t tab) {
	m.tab, m.row = t, 0
	switch t {
	case tabCards:
		m.rearm()
	case tabRuns:
		ids, _ := m.runRows()
		m.runGone = ""
		m.chooseRow(ids)
	case tabJournal:
		m.entryID, m.entryGone = "", ""
		m.showEntry()
	}
}

func (m *consoleModel) key(k string) (tea.Model, tea.Cmd) {
	switch k {
	case "ctrl+c":
		return m, tea.Quit
	case "tab":
		m.showTab((m.tab + 1) % 3)
		return m, nil
	case "shift+tab":
		m.showTab((m.tab + 2) % 3)
		return m, nil
	case "q":
		if p := m.prompt(); p == nil || p.word == "" || m.tab != tabCards {
			return m, tea.Quit
		}
	}
	switch m.tab {
	case tabRuns:
		return m.runsKey(k)
	case tabJournal:
		return m.journalKey(k)
	}
	armed := m.arm()
	p := m.prompt()
	// While a name is typed out, j and k are letters of it.
	typing := p != nil && p.word != ""
	switch {
	case k == "up" || k == "k" && !typing:
		if m.sel > 0 {
			m.sel--
			m.gone = ""
			m.showSelected()
		}
		return m, nil
	case k == "down" || k == "j" && !typing:
		if m.sel < len(m.cards)-1 {
			m.sel++
			m.gone = ""
			m.showSelected()
		}
		return m, nil
	}
	if p == nil {
		return m, nil
	}
	if m.gone != "" {
		// The key was meant for the card that went away.
		m.note = goneNote(m.gone, m.current()) + " before answering it"
		m.gone = ""
		m.rearm()
		return m, nil
	}
	if !armed {
		m.note = "card " + p.card.ID + " just appeared: read it first"
		return m, nil
	}
	r := p.key(k)
	if r.note != "" {
		m.note = r.note
	}
	if r.verdict == 0 {
		return m, nil
	}
	if r.verdict != api.VerdictDeny && m.height > 0 && m.layout().cut {
		m.prompts[p.card.ID] = newCardPrompt(p.card)
		m.note = "card " + p.card.ID + " does not fit this window: make it taller and read it whole before approving it"
		return m, nil
	}
	id, v, subject := p.card.ID, r.verdict, r.subject
	m.note, m.sent, m.sentGone = fmt.Sprintf("%s: answering…", id), id, ""
	gw := m.gw
	return m, func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		applied, err := gw.Answer(ctx, id, v, subject)
		if err != nil {
			return doneMsg{text: fmt.Sprintf("%s: not applied: %v", id, err), failed: true, card: id}
		}
		return doneMsg{text: fmt.Sprintf("%s: %s", id, answered[applied])}
	}
}

func (m *consoleModel) prompt() *cardPrompt {
	c := m.current()
	if c == nil {
		return nil
	}
	return m.prompts[c.ID]
}

// moveRow moves the chosen row of a list of n rows on ↑ and ↓, and
// reports whether k was one of them.
func (m *consoleModel) moveRow(k string, n int) bool {
	switch k {
	case "up", "k":
		if m.row > 0 {
			m.row--
		}
	case "down", "j":
		if m.row < n-1 {
			m.row++
		}
	default:
		return false
	}
	return true
}

var (
	titleStyle = lipgloss.NewStyle().Bold(true)
	tabOn      = lipgloss.NewStyle().Bold(true).Reverse(true)
	dimStyle   = lipgloss.NewStyle().Faint(true)
	warnStyle  = lipgloss.NewStyle().Bold(true)
)
