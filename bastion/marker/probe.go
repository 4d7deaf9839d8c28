package marker

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/postern/postern/bastion/journal"
)

// probeScript runs in /bin/sh after _pm_id=<id>. It reports on the marker
// directory between a header and an end line, and fences an id that never
// started: it makes the directory itself, so that a wrapper arriving late
// (say, an exec request still in flight on a dying connection) refuses to
// run. That is what makes not_started a fact rather than a guess.
const probeScript = `_pm_d=$HOME/` + runsDir + `
_pm_r=$_pm_d/$_pm_id
_pm_b=
{ read -r _pm_b </proc/sys/kernel/random/boot_id; } 2>/dev/null
echo "postern-probe 1 $_pm_id"
echo "now=$(date +%s)"
echo "boot_id_now=$_pm_b"
echo "dir=$_pm_r"
case $HOME in /?*) _pm_h=1 ;; *) _pm_h= ;; esac
if [ -z "$_pm_h" ]; then
  echo "state=unavailable"
elif [ ! -d "$_pm_r" ] && { [ -d "$_pm_d" ] || mkdir -p -- "$_pm_d"; } 2>/dev/null && mkdir -m 700 -- "$_pm_r" 2>/dev/null; then
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

// Probe returns the command line that reports on the markers of run id;
// send it to the same user@host over a fresh connection, after the lost
// one is gone, and pass its stdout to ParseProbe. A run that never started
// is fenced: Probe creates its directory, so it cannot start later.
func Probe(id string) (string, error) {
	if !journal.ValidID(id) {
		return "", fmt.Errorf("cannot probe: %q is not a journal id", id)
	}
	return shellScript(id, probeScript, "postern-probe"), nil
}

// MaxProbeOutput bounds how much of a probe's output is read: its report
// is a few lines. The bastion stops reading a probe's output there.
const MaxProbeOutput = 64 << 10

// ParseProbe reads the stdout of the Probe command for run id and says
// what it shows, as a journal.Resolution by journal.ByProbe (At is left
// for journal.Resolve to fill in); accepted says whether the host had
// accepted the command request (the entry was dispatched):
//
//	exit recorded                               ran, with its status
//	aborted                                     not_started
//	fenced (now or earlier), not accepted       not_started
//	fenced (now or earlier), accepted           inconclusive: removed
//	lock held                                   still_running
//	start, no exit, the host rebooted since     inconclusive
//	start, lock free, no exit                   inconclusive: killed
//	anything else                               inconclusive
//
// The wrapper makes the marker directory before anything else, so a
// host that accepted the command and has no directory for it lost it
// (anything that runs as the user can remove it), or the wrapper was
// killed at once: that tells nothing of whether the command started.
//
// Evidence holds a one-line summary and the report itself (Resolve cuts
// it at journal.MaxEvidence). Lines outside
// the report (a login script's greeting) are ignored. An error means the
// output holds no report for id: the probe did not run as expected.
func ParseProbe(id string, output []byte, accepted bool) (journal.Resolution, error) {
	if len(output) > MaxProbeOutput {
		output = output[:MaxProbeOutput]
	}
	var (
		lines  []string
		in     bool
		closed bool
		f      = map[string]string{}
	)
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 0, 4096), MaxProbeOutput)
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
		return journal.Resolution{}, fmt.Errorf("the probe output holds no complete report for %s: the host's login shell may not be a POSIX shell, or the connection failed", id)
	}

	r := journal.Resolution{By: journal.ByProbe, Result: journal.ResultInconclusive}
	var why string
	bootNow, bootStart := f["boot_id_now"], f["start.boot_id"]
	rebooted := bootNow != "" && bootStart != "" && bootNow != bootStart
	// Said of a directory missing for a command the host accepted.
	const removed = ", though the host had accepted the command and the wrapper makes the directory before anything else: it was removed (anything that runs as the user can remove it), or the wrapper was killed at once, and whether the command started cannot be told"
	switch {
	case f["state"] == "fenced_now" && accepted:
		why = "no marker directory" + removed + "; the probe created the directory, so this run can no longer start"
	case f["state"] == "fenced_now":
		r.Result = journal.ResultNotStarted
		why = "no marker directory: the command never started here; the probe created the directory, so this run can no longer start"
	case f["state"] != "present":
		why = "the probe could not read or create the marker directory " + f["dir"]
	case f["exit.status"] != "":
		n, err := strconv.Atoi(f["exit.status"])
		if err != nil || n < 0 || n > 255 {
			why = fmt.Sprintf("the exit record holds a bad status %q", f["exit.status"])
			break
		}
		r.Result, r.ExitStatus = journal.ResultRan, &n
		why = fmt.Sprintf("the command ran and exited with status %d", n)
		if sig := f["exit.signal"]; sig != "" {
			why += " (killed by SIG" + sig + ")"
		}
	case f["aborted.signal"] != "":
		r.Result = journal.ResultNotStarted
		why = "the wrapper received SIG" + f["aborted.signal"] + " before starting the command, and did not run it"
	case f["fenced.at"] != "" && f["start.started"] == "" && accepted:
		why = "an earlier probe found no marker directory" + removed + "; it fenced this run, which can no longer start"
	case f["fenced.at"] != "" && f["start.started"] == "":
		r.Result = journal.ResultNotStarted
		why = "an earlier probe found no marker directory and fenced this run: the command never started"
	case f["start.started"] != "" && rebooted:
		why = "the command started (pid " + f["start.pid"] + ") before the host rebooted (boot id " + bootStart + ", now " + bootNow + ") and recorded no exit: it did not run to its end, or ended without recording it"
	case f["lock"] == "held":
		r.Result = journal.ResultStillRunning
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
	r.Evidence = why + "\n\n" + strings.Join(lines, "\n")
	return r, nil
}
