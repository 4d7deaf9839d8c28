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
	// ErrBehindAnchor is wrapped, with ErrDamaged, by Open's refusal of
	// a log that ends before one of Config.Anchors, or holds another
	// record where one of them names one: an older copy of the log, or
	// the log cut back. Log.Holds wraps it for the same two.
	ErrBehindAnchor = errors.New("it is behind an anchor of it")
	// ErrNewerFormat is returned for a log or a key file of a format
	// version later than this build reads: sound, as far as it can tell,
	// and not to be written to or moved aside; a later postern reads it.
	ErrNewerFormat = errors.New("written by a newer postern")
)
