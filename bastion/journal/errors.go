package journal

import (
	"errors"
	"fmt"
)

var (
	// ErrNoJournal is returned by OpenReadOnly when there is no journal
	// file yet. Nothing is created.
	ErrNoJournal = errors.New("no command journal yet: the bastion creates it when it first starts")
	// ErrBusy is returned by Open and OpenReadOnly when another process
	// holds the journal file.
	ErrBusy = errors.New("command journal is held by another process")
	// ErrDamaged is returned when the journal file or a record in it cannot
	// be read. The file is left exactly as it was.
	ErrDamaged = errors.New("command journal is damaged")
	// ErrReadOnly is returned by every change to a journal opened with
	// OpenReadOnly.
	ErrReadOnly = errors.New("command journal is open read-only: changes go through the running gateway")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("command journal is closed")
	// ErrNotFound is returned by Get and by changes naming an unknown id.
	ErrNotFound = errors.New("no such journal entry")
	// ErrTransition is wrapped by the errors of changes that the entry's
	// state does not allow, such as a second End.
	ErrTransition = errors.New("change not allowed in this state")
	// ErrUnresolved is wrapped by the *UnresolvedError Start returns for a
	// command identical to an earlier one whose outcome is unknown.
	ErrUnresolved = errors.New("an identical earlier command has an unknown outcome")
)

// UnresolvedError is returned by Start when an identical command (same
// verified host key, user, kind and command bytes) has an entry whose outcome is
// unknown and that no person has resolved or approved retrying. Entry is
// the most recent such entry: show it on the approval card, then Start
// again with RetryOf set to its ID once a person approves.
type UnresolvedError struct {
	Entry *Entry
}

func (e *UnresolvedError) Error() string {
	return fmt.Sprintf("not running %s on %s: the same command started %s as %s and its outcome is unknown",
		e.Entry.Kind, e.Entry.Target, e.Entry.Started.Format("2006-01-02 15:04:05Z07:00"), e.Entry.ID)
}

func (e *UnresolvedError) Unwrap() error { return ErrUnresolved }

// transitionError is a refused change; errors.Is(err, ErrTransition)
// holds for it.
type transitionError struct{ msg string }

func (e *transitionError) Error() string        { return e.msg }
func (e *transitionError) Is(target error) bool { return target == ErrTransition }

func transitionf(format string, args ...any) error {
	return &transitionError{fmt.Sprintf(format, args...)}
}
