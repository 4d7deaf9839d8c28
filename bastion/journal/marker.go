package journal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Remote markers. With markers on for a host, the relay sends Wrap's
// command line upstream instead of the command itself. The wrapper keeps a
// small record on the remote host, in
//
//	${XDG_STATE_HOME:-$HOME/.local/state}/postern/runs/<id>/
//
// so that, when the outcome is lost, Probe can ask the host what became of
// the command over a fresh connection, and ParseProbe can turn the answer
// into a Resolution. The files:
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

// ExitNotRun is the status the wrapper exits with when it did not run the
// command: the id already ran (or was fenced) on this host, or the marker
// directory could not be made or written. Its message on stderr starts with
// MarkerMessagePrefix. A command can exit 125 too: probe when it matters.
const ExitNotRun = 125

// MarkerMessagePrefix starts every line the wrapper itself writes to
// stderr.
const MarkerMessagePrefix = "postern-marker: "

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
const wrapScript = `_pm_d=${XDG_STATE_HOME:-$HOME/.local/state}/postern/runs
_pm_r=$_pm_d/$_pm_id
_pm_s=
for _pm_g in INT QUIT ABRT ALRM TERM USR1 USR2 PIPE; do trap "_pm_s=$_pm_g" "$_pm_g"; done
(
  _pm_s=
  for _pm_g in HUP INT QUIT ABRT ALRM TERM USR1 USR2 PIPE; do trap "_pm_s=$_pm_g" "$_pm_g"; done
  _pm_no() { printf "postern-marker: %s; command not run\n" "$1" >&2; exit 125; }
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

// probeScript runs in /bin/sh after _pm_id=<id>. It reports on the marker
// directory between a header and an end line, and fences an id that never
// started: it makes the directory itself, so that a wrapper arriving late
// (say, an exec request still in flight on a dying connection) refuses to
// run. That is what makes not_started a fact rather than a guess.
const probeScript = `_pm_d=${XDG_STATE_HOME:-$HOME/.local/state}/postern/runs
_pm_r=$_pm_d/$_pm_id
_pm_b=
{ read -r _pm_b </proc/sys/kernel/random/boot_id; } 2>/dev/null
echo "postern-probe 1 $_pm_id"
echo "now=$(date +%s)"
echo "boot_id_now=$_pm_b"
echo "dir=$_pm_r"
if [ ! -d "$_pm_r" ] && { [ -d "$_pm_d" ] || mkdir -p -- "$_pm_d"; } 2>/dev/null && mkdir -m 700 -- "$_pm_r" 2>/dev/null; then
  printf "at=%s\nboot_id=%s\n" "$(date +%s)" "$_pm_b" >"$_pm_r/fenced.tmp" && mv -f -- "$_pm_r/fenced.tmp" "$_pm_r/fenced"
  echo "state=fenced_now"
elif [ -d "$_pm_r" ]; then
  echo "state=present"
  for _pm_n in start exit aborted fenced; do
    [ -f "$_pm_r/$_pm_n" ] || continue
    while IFS= read -r _pm_v || [ -n "$_pm_v" ]; do echo "$_pm_n.$_pm_v"; done <"$_pm_r/$_pm_n"
  done
  _pm_p=
  _pm_m=
  if [ -f "$_pm_r/start" ]; then
    while IFS== read -r _pm_k _pm_v; do
      case $_pm_k in pid) _pm_p=$_pm_v ;; lock) _pm_m=$_pm_v ;; esac
    done <"$_pm_r/start"
  fi
  _pm_k=unknown
  if [ "$_pm_m" = pid ]; then
    _pm_k=free
    if [ -n "$_pm_p" ] && kill -0 "$_pm_p" 2>/dev/null && ps -o args= -p "$_pm_p" 2>/dev/null | grep -F -q -e "_pm_id=$_pm_id"; then _pm_k=held; fi
  elif [ ! -f "$_pm_r/lock" ]; then
    _pm_k=free
  elif command -v flock >/dev/null 2>&1; then
    flock -n -s "$_pm_r/lock" true 2>/dev/null
    case $? in 0) _pm_k=free ;; 1) _pm_k=held ;; esac
  fi
  echo "lock=$_pm_k"
else
  echo "state=unavailable"
fi
echo "postern-probe end"`

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
// starting with MarkerMessagePrefix and exits ExitNotRun without running
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
	if !ValidID(id) {
		return "", fmt.Errorf("cannot wrap a command: %q is not a journal id", id)
	}
	if bytes.IndexByte(command, 0) >= 0 {
		return "", errors.New("cannot wrap a command containing a NUL byte: sshd refuses such a command, so send it as it is")
	}
	s := "exec /bin/sh -c '_pm_id=" + id + "\n" + wrapScript + "' postern-run " + shellQuote(command)
	if len(s) > maxArg {
		return "", fmt.Errorf("cannot wrap a command of %d bytes: with the wrapper it exceeds the %d bytes a host passes to a shell in one argument", len(command), maxArg)
	}
	return s, nil
}

// Probe returns the command line that reports on the markers of run id;
// send it to the same user@host over a fresh connection, after the lost
// one is gone, and pass its stdout to ParseProbe. A run that never started
// is fenced: Probe creates its directory, so it cannot start later.
func Probe(id string) (string, error) {
	if !ValidID(id) {
		return "", fmt.Errorf("cannot probe: %q is not a journal id", id)
	}
	return "exec /bin/sh -c '_pm_id=" + id + "\n" + probeScript + "' postern-probe", nil
}

// shellQuote quotes b for a POSIX shell.
func shellQuote(b []byte) string {
	return "'" + strings.ReplaceAll(string(b), "'", `'\''`) + "'"
}

// maxProbeOutput bounds how much of a probe's output is read.
const maxProbeOutput = 64 << 10

// ParseProbe reads the stdout of the Probe command for run id and says
// what it shows, as a Resolution by "probe" (At is left for Resolve to
// fill in):
//
//	exit recorded                               ran, with its status
//	aborted, or fenced (now or earlier)         not_started
//	lock held                                   still_running
//	start, no exit, the host rebooted since     inconclusive
//	start, lock free, no exit                   inconclusive: killed
//	anything else                               inconclusive
//
// Evidence holds a one-line summary and the report itself. Lines outside
// the report (a login script's greeting) are ignored. An error means the
// output holds no report for id: the probe did not run as expected.
func ParseProbe(id string, output []byte) (Resolution, error) {
	if len(output) > maxProbeOutput {
		output = output[:maxProbeOutput]
	}
	var (
		lines  []string
		in     bool
		closed bool
		f      = map[string]string{}
	)
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 0, 4096), maxProbeOutput)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case !in:
			in = line == "postern-probe 1 "+id
		case line == "postern-probe end":
			closed = true
		default:
			lines = append(lines, line)
			if k, v, ok := strings.Cut(line, "="); ok {
				if _, dup := f[k]; !dup {
					f[k] = v
				}
			}
		}
		if closed {
			break
		}
	}
	if !in || !closed {
		return Resolution{}, fmt.Errorf("the probe output holds no complete report for %s: the host's login shell may not be a POSIX shell, or the connection failed", id)
	}

	r := Resolution{By: ByProbe, Result: ResultInconclusive}
	var why string
	bootNow, bootStart := f["boot_id_now"], f["start.boot_id"]
	rebooted := bootNow != "" && bootStart != "" && bootNow != bootStart
	switch {
	case f["state"] == "fenced_now":
		r.Result = ResultNotStarted
		why = "no marker directory: the command never started here; the probe created the directory, so this run can no longer start"
	case f["state"] != "present":
		why = "the probe could not read or create the marker directory " + f["dir"]
	case f["exit.status"] != "":
		n, err := strconv.Atoi(f["exit.status"])
		if err != nil || n < 0 || n > 255 {
			why = fmt.Sprintf("the exit record holds a bad status %q", f["exit.status"])
			break
		}
		r.Result, r.ExitStatus = ResultRan, &n
		why = fmt.Sprintf("the command ran and exited with status %d", n)
		if sig := f["exit.signal"]; sig != "" {
			why += " (killed by SIG" + sig + ")"
		}
	case f["aborted.signal"] != "":
		r.Result = ResultNotStarted
		why = "the wrapper received SIG" + f["aborted.signal"] + " before starting the command, and did not run it"
	case f["fenced.at"] != "" && f["start.started"] == "":
		r.Result = ResultNotStarted
		why = "an earlier probe found no marker directory and fenced this run: the command never started"
	case f["start.started"] != "" && rebooted:
		why = "the command started (pid " + f["start.pid"] + ") before the host rebooted (boot id " + bootStart + ", now " + bootNow + ") and recorded no exit: it did not run to its end, or ended without recording it"
	case f["lock"] == "held":
		r.Result = ResultStillRunning
		if f["start.started"] == "" {
			why = "the wrapper is starting (it holds the lock but has not recorded the start)"
		} else {
			why = "the command started (pid " + f["start.pid"] + ") and is still running"
		}
	case f["start.started"] != "" && f["lock"] == "free":
		why = "the command started (pid " + f["start.pid"] + ") but is no longer running and recorded no exit: it was killed (SIGKILL, or its whole session at once)"
	case f["start.started"] != "":
		why = "the command started, and the host cannot tell whether it still runs (flock(1) is missing or failed)"
	default:
		why = "the marker directory holds no start record: the wrapper stopped before running the command, or is about to"
	}
	r.Evidence = clip(why+"\n\n"+strings.Join(lines, "\n"), MaxEvidence)
	return r, nil
}
