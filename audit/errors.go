package audit

import "errors"

var (
	// ErrNotRecorded is wrapped by every error Append returns: the event is
	// not durably in the log, so the action it describes must not be taken.
	ErrNotRecorded = errors.New("action not taken: the audit log could not record it")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("audit log is closed")
	// ErrLocked is returned by Open when another writer holds the log.
	ErrLocked = errors.New("audit log is in use by another writer")
	// ErrDamaged is returned by Open when the log fails verification before
	// its last record. Open changes nothing in that case.
	ErrDamaged = errors.New("audit log is damaged")
)
