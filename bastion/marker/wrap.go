package marker

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/postern/postern/bastion/journal"
)

// ExitNotRun is the status the wrapper exits with when it did not run the
// command: the id already ran (or was fenced) on this host, or the marker
// directory could not be made or written. Its message on stderr starts with
// MessagePrefix. A command can exit 125 too: probe when it matters.
const ExitNotRun = 125

// MessagePrefix starts every line the wrapper itself writes to
// stderr.
const MessagePrefix = "postern-marker: "

// runsDir is where the markers live on the host, under $HOME as sshd
// sets it (see the package documentation).
const runsDir = ".local/state/postern/runs"

// maxArg is the longest single argument Linux passes to a program
// (MAX_ARG_STRLEN less the NUL); sshd hands the whole command line to the
// login shell as one argument.
const maxArg = 128<<10 - 1

// wrapScript runs in /bin/sh with $1 the command, after _pm_id=<id>.
// It contains no single quote, so one pair of them carries it. Variables
// are prefixed _pm_ so that no exported variable of the same name is
// changed for the command.
//
// Two processes: the outer shell stays the session's leader, as the login
// shell would have been, and the subshell keeps the markers and waits for
// the command. The leader catches every signal but HUP, so that a hangup
// ends it as it would end a shell, and the kernel passes the hangup on to
// the command; the subshell catches HUP too, so that it lives to record
// the command's end. See Wrap.
const wrapScript = `_pm_d=$HOME/` + runsDir + `
_pm_r=$_pm_d/$_pm_id
_pm_s=
for _pm_g in INT QUIT ABRT ALRM TERM USR1 USR2 PIPE; do trap "_pm_s=$_pm_g" "$_pm_g"; done
(
  _pm_s=
  for _pm_g in HUP INT QUIT ABRT ALRM TERM USR1 USR2 PIPE; do trap "_pm_s=$_pm_g" "$_pm_g"; done
  _pm_no() { printf "postern-marker: %s; command not run\n" "$1" >&2; exit 125; }
  case $HOME in /?*) ;; *) _pm_no "HOME is not an absolute path" ;; esac
  { [ -d "$_pm_d" ] || mkdir -p -- "$_pm_d"; } 2>/dev/null || _pm_no "cannot create $_pm_d"
  if ! mkdir -m 700 -- "$_pm_r" 2>/dev/null; then
    [ -d "$_pm_r" ] && _pm_no "run $_pm_id was already started on this host (see $_pm_r); a run never starts twice"
    _pm_no "cannot create $_pm_r"
  fi
  { command exec 9>"$_pm_r/lock"; } 2>/dev/null || _pm_no "cannot open $_pm_r/lock"
  _pm_l=pid
  if command -v flock >/dev/null 2>&1; then
    flock -x 9 || _pm_no "cannot lock $_pm_r/lock"
    _pm_l=flock
  fi
  _pm_b=
  { read -r _pm_b </proc/sys/kernel/random/boot_id; } 2>/dev/null
  printf "started=%s\npid=%s\nboot_id=%s\nlock=%s\n" "$(date +%s)" "$$" "$_pm_b" "$_pm_l" >"$_pm_r/start.tmp" &&
    mv -f -- "$_pm_r/start.tmp" "$_pm_r/start" || _pm_no "cannot record the start in $_pm_r"
  if [ -n "$_pm_s" ]; then
    printf "signal=%s\n" "$_pm_s" >"$_pm_r/aborted.tmp" && mv -f -- "$_pm_r/aborted.tmp" "$_pm_r/aborted"
    exec /bin/sh -c "kill -s $_pm_s \$\$"
  fi
  "${SHELL:-/bin/sh}" -c "$1"
  _pm_x=$?
  _pm_t=
  if [ -n "$_pm_s" ] && [ "$_pm_x" -gt 128 ] && [ "$(kill -l "$_pm_x" 2>/dev/null)" = "$_pm_s" ]; then _pm_t=$_pm_s; fi
  printf "status=%s\nsignal=%s\nended=%s\n" "$_pm_x" "$_pm_t" "$(date +%s)" >"$_pm_r/exit.tmp" &&
    mv -f -- "$_pm_r/exit.tmp" "$_pm_r/exit"
  exit "$_pm_x"
)
_pm_x=$?
if [ -n "$_pm_s" ] && [ "$_pm_x" -gt 128 ] && [ "$(kill -l "$_pm_x" 2>/dev/null)" = "$_pm_s" ]; then
  trap - "$_pm_s"
  kill -s "$_pm_s" $$
fi
exit "$_pm_x"`

// Wrap returns the command line to send upstream instead of command when
// markers are on for the host: a POSIX sh command that records the run
// under the entry's id on the host and runs command exactly as sshd would
// have, as "$SHELL -c command" (the login shell, which sshd puts in
// SHELL; /bin/sh when it is unset), with stdin, stdout and stderr passed
// through untouched and its exit status as the wrapper's.
//
// The command travels inside single quotes, with each single quote in it
// written as
//
//	'\''
//
// (close, escaped quote, reopen): the one quoting every POSIX shell reads
// back byte for byte, whatever the bytes (newlines, $, `, \, invalid
// UTF-8), with no helper program. Base64 would need base64(1), which POSIX
// does not have (and whose decode flag differs between systems), and
// printf octal escapes quadruple the size and lose trailing newlines in
// command substitution. Single quotes grow the command only by its quote
// characters, which matters because sshd passes the whole line as one
// argument, and Linux caps one argument at 128 KiB: Wrap fails when the
// result would not fit. A NUL byte cannot reach any shell (sshd refuses
// such a command), so Wrap refuses it too.
//
// The login shell only sees "exec /bin/sh -c '<wrapper>' postern-run
// '<command>'", so it must read POSIX quoting: sh, dash, bash, ksh, zsh
// and busybox do; fish, csh and tcsh do not, and neither does Windows.
// Turn markers on only for hosts whose login shell is one of the first.
//
// The wrapper takes the id with mkdir, which is atomic: if the directory
// exists (the id ran before, or a probe fenced it), it writes a message
// starting with MessagePrefix and exits ExitNotRun without running
// anything. It then holds an flock on the lock file (with no flock(1),
// the start record's pid stands in: Probe checks that the pid is alive and
// still this wrapper), records start, runs the command, records exit.
//
// Signals. The wrapper is two shells: the session's leader, in the place
// of the login shell, and a subshell that keeps the markers and runs the
// command. All three share one process group, so a terminal's ^C, and
// sshd's signal requests (killpg), reach them all. Both shells catch INT,
// QUIT, ABRT, ALRM, TERM, USR1, USR2 and PIPE only to note them and live
// on until the command ends (a caught signal is reset to the default in
// the command, so its own handling is unchanged). When the command ends
// with status 128+N and the shells had received signal N, the command
// died of it: the subshell records status and signal, and the leader
// re-raises the signal on itself, so sshd reports the exit-signal it would
// have reported without the wrapper. Otherwise the status passes through,
// so a signal sent to the command alone (or a command that exits 128+N) is
// reported as exit status 128+N.
//
// A hangup is what a lost pty session sends, and only to the session's
// leader: the leader does not catch HUP, so it ends, and the kernel then
// sends HUP to the command, as when a login shell ends. The subshell
// catches HUP, so it still records how the command ended (usually status
// 129, signal HUP). A command that survives its hangup keeps running, and
// Probe sees it running.
//
// A signal caught before the command starts is recorded as aborted, and
// the command is not run. A signal sent to a shell's pid alone waits until
// the command ends. SIGKILL (of the group) leaves start without exit,
// which Probe reports as inconclusive.
//
// The command inherits the lock on descriptor 9, so while anything it
// started keeps running, Probe sees the run as still running.
func Wrap(id string, command []byte) (string, error) {
	if !journal.ValidID(id) {
		return "", fmt.Errorf("cannot wrap a command: %q is not a journal id", id)
	}
	if bytes.IndexByte(command, 0) >= 0 {
		return "", errors.New("cannot wrap a command containing a NUL byte: sshd refuses such a command, so send it as it is")
	}
	s := shellScript(id, wrapScript, "postern-run") + " " + shellQuote(command)
	if len(s) > maxArg {
		return "", fmt.Errorf("cannot wrap a command of %d bytes: with the wrapper it exceeds the %d bytes a host passes to a shell in one argument", len(command), maxArg)
	}
	return s, nil
}

// shellQuote quotes b for a POSIX shell.
func shellQuote(b []byte) string {
	return "'" + strings.ReplaceAll(string(b), "'", `'\''`) + "'"
}

// shellScript returns the command line that runs script in /bin/sh for
// run id, with $0 set to name; arguments may follow. The script holds no
// single quote (the tests check), so one pair of them carries it.
func shellScript(id, script, name string) string {
	return "exec /bin/sh -c '_pm_id=" + id + "\n" + script + "' " + name
}
