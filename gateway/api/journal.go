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

// How a command ended (JournalEntry.End.Outcome), where the end carries
// more: an exit status or a signal.
const (
	OutcomeExited   = journal.OutcomeExited
	OutcomeSignaled = journal.OutcomeSignaled
)

// ErrJournalBusy is returned by OpenJournalFile when a running gateway
// holds the journal.
var ErrJournalBusy = journal.ErrBusy

// JournalFile reads the bastion's journal in the state directory while no
// gateway runs. It never writes: a change goes through the gateway, which
// records it in the audit log too.
type JournalFile struct{ j *journal.Journal }

// OpenJournalFile opens the journal read-only.
func OpenJournalFile() (*JournalFile, error) {
	dir, err := xdg.StateDir()
	if err != nil {
		return nil, err
	}
	j, err := journal.OpenReadOnly(filepath.Join(dir, xdg.JournalFile))
	if err != nil {
		return nil, err
	}
	return &JournalFile{j}, nil
}

// Journal lists entries, newest first, as Client.Journal does.
func (f *JournalFile) Journal(_ context.Context, status string, limit int) ([]*JournalEntry, error) {
	return f.j.List(journal.ListOptions{Status: status, Limit: limit})
}

// JournalEntry returns one entry, as Client.JournalEntry does.
func (f *JournalFile) JournalEntry(_ context.Context, id string) (*JournalEntry, error) {
	return f.j.Get(id)
}

// Close closes the file.
func (f *JournalFile) Close() error { return f.j.Close() }
