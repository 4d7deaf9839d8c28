// Package marker holds the remote marker scripts: the small POSIX sh
// programs that let the bastion find out, after the fact, what became of
// a command whose outcome it could not observe.
//
// With markers on for a host ([bastion] markers), the relay sends
// Wrap(id, command) upstream instead of the command itself, id being the
// command's journal entry. The wrapper runs the command exactly as sshd
// would have, and keeps a small record on the remote host, in
//
//	$HOME/.local/state/postern/runs/<id>/
//
// The path is fixed: HOME is what sshd sets from the password database,
// after the environment the client sent, so no setting a session can pass
// (XDG_STATE_HOME through AcceptEnv, say) moves the markers away from
// where the probe looks. (Were it to, a probe would find no directory and
// report a command that ran as never started.)
//
// The files:
//
//	lock     held (flock) by the wrapper and the command while they run
//	start    started=<epoch> pid=<the wrapper's leader> boot_id=<host boot id> lock=flock|pid
//	exit     status=<$?> signal=<name, when re-raised> ended=<epoch>
//	aborted  signal=<name>: a signal came before the command started; it never ran
//	fenced   at=<epoch> boot_id=…: a probe found no directory and made it; the id can no longer start
//
// Each record is written to a temporary name and renamed, so a reader sees
// all of it or nothing. (The shell cannot fsync: a power loss on the host
// can still lose the newest record.)
//
// The wrapper takes the id with mkdir, which is atomic, so a run never
// starts twice on a host. When the outcome is lost, Probe(id), run over a
// fresh connection, asks the host what became of the command, fencing an
// id that never started so that it can no longer start; ParseProbe turns
// the answer into a journal.Resolution: ran (with the status),
// still_running, not_started or inconclusive. The journal records that
// resolution; this package never touches it.
//
// See Wrap for the wrapper's exact behaviour, quoting and signals, and
// ParseProbe for how a report is read.
package marker
