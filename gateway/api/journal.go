package api

import (
	"context"
	"path/filepath"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/internal/xdg"
)

// JournalEntry is one command in the bastion's journal.
type JournalEntry = journal.Entry

// What a person may record on resolving an entry (ResolveArgs.Result).
const (
	ResultRan          = journal.ResultRan
	ResultStillRunning = journal.ResultStillRunning
	ResultNotStarted   = journal.ResultNotStarted
	ResultInconclusive = journal.ResultInconclusive
)

// JournalStatusUnknown is the status (JournalEntry.Status) of an entry
// whose outcome is unknown, which resolve takes.
const JournalStatusUnknown = journal.StatusUnknown

// How a command ended (JournalEntry.End.Outcome), where the end carries
// more: an exit status or a signal.
const (
	OutcomeExited   = journal.OutcomeExited
	OutcomeSignaled = journal.OutcomeSignaled
)

// ParseJournalStatus reads a status as journal list --status takes it:
// in full or by its first word, in any case. ok is false for a status
// there is not.
func ParseJournalStatus(s string) (status string, ok bool) { return journal.ParseStatus(s) }

// ErrJournalBusy is returned by OpenJournalFile when a running gateway
// holds the journal.
var ErrJournalBusy = journal.ErrBusy

// ErrNoJournal is returned by OpenJournalFile when there is no journal
// yet: the bastion has never run.
var ErrNoJournal = journal.ErrNoJournal

// JournalFile reads the bastion's journal in the state directory while no
// gateway holds it (none runs, or one runs without its bastion). It never writes: a change goes through the gateway, which
// records it in the audit log too. It holds the file (and so keeps a
// gateway from opening it) only while it reads: a page, or an entry, is
// read with the file open, and handed on with it closed, so that a
// reader that waits (a pager the person has not scrolled) keeps no
// gateway from starting.
type JournalFile struct {
	path string
	j    *journal.Journal // open while a read is under way, else nil
	last *journal.Journal // the one last opened, closed: reopened after it
}

// OpenJournalFile opens the journal read-only.
func OpenJournalFile() (*JournalFile, error) {
	dir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, xdg.JournalFile)
	j, err := journal.OpenReadOnly(path)
	if err != nil {
		return nil, err
	}
	// Open for the first read.
	return &JournalFile{path: path, j: j}, nil
}

// read calls fn with the journal open (opening it again after an earlier
// read), and closes it.
func (f *JournalFile) read(fn func(*journal.Journal) error) error {
	if f.j == nil {
		j, err := journal.ReopenReadOnly(f.last)
		if err != nil {
			return err
		}
		f.j = j
	}
	f.last = f.j
	defer f.Close()
	return fn(f.j)
}

// JournalPage lists a page of entries, newest first, as Client.JournalPage
// does.
func (f *JournalFile) JournalPage(_ context.Context, a JournalArgs) (page []*JournalEntry, err error) {
	err = f.read(func(j *journal.Journal) error {
		page, err = ListJournalPage(j, a)
		return err
	})
	return page, err
}

// ListJournalPage answers a page request (OpJournalList without an ID)
// from a journal.
func ListJournalPage(j *journal.Journal, a JournalArgs) ([]*JournalEntry, error) {
	if a.Limit <= 0 || a.Limit > JournalPage {
		a.Limit = JournalPage
	}
	return j.List(journal.ListOptions{Status: a.Status, Limit: a.Limit, Before: a.Before, MaxBytes: JournalPageBytes})
}

// A JournalSource lists journal pages: a Client, or a JournalFile.
type JournalSource interface {
	JournalPage(ctx context.Context, a JournalArgs) ([]*JournalEntry, error)
}

// EachJournalEntry passes the entries of src to fn, newest first, at most
// limit of them (0: all), a page at a time: memory does not grow with the
// journal.
func EachJournalEntry(ctx context.Context, src JournalSource, status string, limit int, fn func(*JournalEntry) error) error {
	before, n := "", 0
	for {
		want := JournalPage
		if limit > 0 {
			want = min(want, limit-n)
		}
		page, err := src.JournalPage(ctx, JournalArgs{Status: status, Limit: want, Before: before})
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		n += len(page)
		// A page short of want may be one bounded by its size
		// (JournalPageBytes): only an empty one is the end.
		if len(page) == 0 || (limit > 0 && n >= limit) {
			return nil
		}
		before = page[len(page)-1].ID
	}
}

// JournalEntry returns one entry, as Client.JournalEntry does.
func (f *JournalFile) JournalEntry(_ context.Context, id string) (e *JournalEntry, err error) {
	err = f.read(func(j *journal.Journal) error {
		e, err = j.Get(id)
		return err
	})
	return e, err
}

// Close closes the file, if a read holds it open.
func (f *JournalFile) Close() error {
	if f.j == nil {
		return nil
	}
	j := f.j
	f.j = nil
	return j.Close()
}
