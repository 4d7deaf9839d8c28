// Package journal is the bastion's command journal: a durable record of
// every remote command the bastion relays, kept so that after a crash, a
// lost connection or a killed client anyone can say exactly what is known
// about a command — it completed with status N, it never started (safe to
// retry), or its outcome is unknown (inspect the host first).
//
// A remote command whose outcome was not observed is unknown. The bastion
// never retries it on its own, and refuses an identical command until the
// entry is resolved or a person approves the retry.
//
// # Recording a command
//
// The relay makes one Entry per session request (exec, shell or
// subsystem) and drives it through these calls, each of which returns only
// once the change is on disk:
//
//	j.Start(e)                before the request is sent upstream
//	j.Dispatched(e.ID)        when the upstream accepts the request
//	j.End(e.ID, End{…})       an observed outcome, before the client is told
//	j.MarkUnknown(e.ID, …)    no outcome can be observed, before the client is told
//	j.Resolve(e.ID, …)        later: what a person or a probe found out
//
// A failed Start means the command must not be sent. An entry ends once:
// End or MarkUnknown, never both, never twice. Once unknown, an entry only
// takes Resolutions, which are kept in order with their evidence; the last
// one decides the status. End outcomes rejected, denied and
// failed_to_start say nothing ran, and are refused for a request the
// upstream had accepted.
//
// # Statuses
//
// Entry.Status gives each entry exactly one of four statuses, the strings
// users and JSON see:
//
//	RUNNING                                   started, no outcome yet, in the bastion that holds the journal
//	COMPLETED                                 End (exited, signaled), or resolved "ran"
//	RETRY_SAFE previous_action_not_started    End rejected, denied or failed_to_start, or resolved "not_started"
//	STATUS_UNKNOWN                            unknown (or End closed_no_status, which earlier versions wrote
//	  inspect_activity_journal                  of a channel closed without a status), unresolved or last
//	                                            resolved still_running or inconclusive
//
// RETRY_SAFE is given only when the journal proves the command never ran:
// the upstream refused it, it was never sent, or the host's markers show
// it never started (and can no longer start). Everything else that lacks
// an observed end is STATUS_UNKNOWN.
//
// # Restarts, and the retry guard
//
// Open takes the instance id of the bastion process (NewID makes one).
// Every entry an earlier instance left RUNNING becomes unknown there and
// then, with reason bastion_restarted and the last phase it reached
// (intent: not yet accepted upstream; dispatched: accepted).
//
// Start refuses, with an *UnresolvedError, a command identical (same
// verified host key, user, kind and command bytes) to one that is
// STATUS_UNKNOWN and not already retried (by a retry that ran, runs, or
// may have run). The host's name and port play
// no part: the same host reached as 127.0.0.1 and as localhost, or
// through a port forwarded to it, is one host. Unresolved answers the same question up front,
// so the approval card can show the earlier attempt. When a person
// approves, Start again with RetryOf set to that entry: the earlier entry
// records RetriedBy, and the approval cannot be used twice. A retry that
// ran nothing (rejected, failed to start, resolved not_started) used the
// approval without running the command: the earlier entry guards again,
// and a person's approval can start another retry. This also
// stops retry-on-255 loops (Ansible's, for one) from running a command
// twice: the bastion reports unknown outcomes as ssh's 255.
//
// # Remote markers
//
// An entry with Marker set ran inside the wrapper of package
// bastion/marker, which leaves start and exit records on the host. Only
// such an entry can be resolved by a probe (By "probe"): the marker
// package reads the host's records into a Resolution, and Resolve records
// it like any other.
//
// # Reading
//
// Get takes an id or a unique prefix of it (MinPrefix characters or
// more), List returns entries newest first, filtered by status and start
// time (RUNNING and STATUS_UNKNOWN read from the open and unresolved
// indexes, not from every entry), and Follow streams every change as it
// is committed. The command
// line asks the gateway, which holds the journal; when no gateway runs, it
// uses OpenReadOnly, which creates nothing, fails quickly with ErrBusy if a
// gateway does hold the file, and shows entries without an outcome as
// unknown (bastion_not_running), since no bastion can be running them.
//
// # Storage
//
// The journal is one bbolt file, $XDG_STATE_HOME/postern/journal.db, mode
// 0600. bbolt commits with fsync (NoSync stays false). Open and
// OpenReadOnly always set a lock timeout: bbolt holds an exclusive flock
// for the writer, a shared one for readers, and would otherwise wait
// forever. Changes that arrive together are committed together, one fsync
// per group, so concurrent commands do not queue behind each other's
// syncs. Before opening an existing file for writing, Open reads all of
// it read-only; a file that is damaged, or not a journal, is reported with
// ErrDamaged and never written, truncated or removed.
//
// A damaged journal is never written over: an empty file (bbolt never
// leaves one: it was cut to nothing) is damaged too, since a new journal
// in its place would drop every retry guard. An open journal remembers the
// first damage a read or change met (Damaged), so that its holder stops
// using it; MoveAside renames the file beside itself, untouched, for a new
// journal to start once a person decided to.
//
// Buckets:
//
//	meta             "format" → "postern-journal 1", "guard" → "host-key without port, login user, closed_no_status unknown"
//	meta/instances   instance id → {"opened": time, "pid": n}, one per Open
//	entries          id → record: the entry's latest state
//	open             id → instance id, for entries with no End and no Unknown
//	unresolved       guard key ‖ id → "", for entries whose outcome is unknown (retried or not)
//
// Ids are 26 characters, time-sortable (see NewID), so entries iterate in
// start order: a new entry's id sorts after every id the file holds, also
// when the clock went back since some were made. The guard key is the hex SHA-256 of the length-prefixed
// host key fingerprint, login user (LoginUser), kind and command hash: a
// prefix scan finds the unresolved entries for one command on one host,
// the last being the most recent. (Journals written before the guard went
// by host key alone, without "guard" in meta or with "host-key", which
// also went by port, with "host-key without port", which went by the
// user as given, or with "host-key without port, login user", which left
// out the entries ended closed_no_status, have their index rebuilt at
// Open.) A record is one version byte (1) followed by the
// entry as JSON; DecodeEntry refuses other versions, unknown fields,
// trailing bytes, records over MaxRecord, and entries that break the
// invariants (such as a command that does not match its hash). Command
// and OutputTail are exact bytes, base64 in JSON. Entry's own MarshalJSON,
// for output, adds "status" and, for UTF-8 commands, "command_text".
package journal
