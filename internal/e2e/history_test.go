package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// postern activity shows each event at its time in the person's time
// zone, as --since reads the times it is given and as sessions --history
// shows its own: a signature made at 21:00 UTC reads 06:00 the next day
// in Tokyo.
func TestActivityShowsLocalTimes(t *testing.T) {
	need(t, "ssh-keygen")
	e := newEnv(t)
	e.Setenv("TZ", "Asia/Tokyo")
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	signOnce(e)

	var sign struct {
		Time time.Time `json:"time"`
		Text string    `json:"text"`
	}
	for l := range strings.Lines(e.MustRun("postern", "activity", "--json").Stdout) {
		if strings.Contains(l, `"type":"sign"`) {
			if err := json.Unmarshal([]byte(l), &sign); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sign.Time.IsZero() {
		t.Fatal("no sign event in activity --json")
	}
	want := sign.Time.In(tokyo).Format(time.DateTime) + " sign "
	if !strings.HasPrefix(sign.Text, want) {
		t.Errorf("activity --json: the signature's text is %q, want it to start %q (Tokyo time)", sign.Text, want)
	}
	if out := e.MustRun("postern", "activity").Stdout; !strings.Contains(out, "\n"+want) {
		t.Errorf("activity has no line starting %q (the signature in Tokyo time):\n%s", want, out)
	}
}

// sessions --history counts the signatures a session approval covered:
// not a signature the same run made with another key, which a card
// answered "once" allowed.
func TestSessionsHistoryCountsOnlyTheSessionsSignatures(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "login under the session", job.Wait())
	job = a.Start("ssh-keygen -q -t ed25519 -N '' -f k2 && ssh-add k2 && echo hi > m && ssh-keygen -Y sign -n file -f k2.pub m")
	w.approve(w.e.WaitCard().ID, "--once")
	mustSucceed(t, "a signature with another key, approved once", job.Wait())

	var sessions []struct {
		Key   string `json:"key"`
		Signs int    `json:"signs"`
	}
	out := w.e.MustRun("postern", "sessions", "--history", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &sessions); err != nil {
		t.Fatalf("sessions --history --json: %v\n%s", err, out)
	}
	if len(sessions) != 1 || sessions[0].Key != fingerprint(t, w.e, w.key) || sessions[0].Signs != 1 {
		t.Fatalf("sessions --history --json: want the one session of %s with the 1 signature it covered:\n%s", fingerprint(t, w.e, w.key), out)
	}
}

// A person who reads postern activity through a pager, and stops to read
// for longer than the gateway waits for a stuck client (30 seconds),
// still gets every event: the gateway waits for a reader that paces the
// stream as long as it stays connected.
func TestActivityReadAtAPersonsPace(t *testing.T) {
	mostlyWaits(t)
	need(t, "bash")
	// Megabytes of events, more than the pipe and the sockets hold.
	const events = 20000
	e := unlockedWithSigns(t, events)
	r := e.Run("bash", "-c", `set -o pipefail; postern activity | { sleep 35; grep -c ' sign run=R1 '; }`)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != strconv.Itoa(events) {
		// Whether the log or its reading was at fault: the log verified
		// as it now stands, and read again at once.
		v := e.Run("postern", "audit", "verify")
		again := e.Run("bash", "-c", `set -o pipefail; postern activity | grep -c ' sign run=R1 '`)
		t.Fatalf("activity read by a reader that paused: exit %d, %s of %d signatures\n%s\naudit verify now: exit %d\n%s%s\nactivity read again at once: exit %d, %s signatures\n%s",
			r.Code, strings.TrimSpace(r.Stdout), events, r.Stderr, v.Code, v.Stdout, v.Stderr, again.Code, strings.TrimSpace(again.Stdout), again.Stderr)
	}
}

// A segment removed from the middle of the log is a verification
// failure, as postern-audit(1) promises for any damage: audit verify
// exits 3 and names it in its report (--json too), and the commands that
// read the log print the events before it and exit 3.
func TestMissingSegmentFailsVerification(t *testing.T) {
	mostlyWaits(t)
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	state := e.Path("state", "postern")
	appendSigns(t, state, 30000) // three segments and more
	if _, err := os.Stat(filepath.Join(state, "audit.log.000002")); err != nil {
		t.Fatalf("the log has fewer than three segments: %v", err)
	}
	if err := os.Rename(filepath.Join(state, "audit.log.000001"), e.Path("moved-aside")); err != nil {
		t.Fatal(err)
	}
	r := e.Run("postern", "audit", "verify", "--json")
	var rep struct {
		OK      bool `json:"ok"`
		Failure *struct {
			File string `json:"file"`
			Kind string `json:"kind"`
		} `json:"failure"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); r.Code != 3 || err != nil || rep.OK || rep.Failure == nil || rep.Failure.Kind != "segment_missing" || rep.Failure.File != "audit.log.000001" {
		t.Errorf("verify --json with audit.log.000001 gone: want exit 3 and a failure of kind segment_missing in that file: %s", r)
	}
	if r := e.Run("postern", "audit", "verify"); r.Code != 3 || !strings.Contains(r.Stdout, "FAILED") || !strings.Contains(r.Stdout, "audit.log.000001") {
		t.Errorf("verify with audit.log.000001 gone: %s", r)
	}
	if r := e.Run("postern", "activity", "--passphrase-file", pass); r.Code != 3 || !strings.Contains(r.Stdout, " sign run=R1 ") || !strings.Contains(r.Stderr, "audit.log.000001 is missing") {
		t.Errorf("activity with audit.log.000001 gone: want the events before it, then exit 3: exit %d\n%s", r.Code, r.Stderr)
	}
}

// unlockedWithSigns makes a vault whose audit log holds n sign events of
// run R1 (appendSigns), and starts a gateway and unlocks it.
func unlockedWithSigns(t *testing.T, n int) *Env {
	t.Helper()
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	appendSigns(t, e.Path("state", "postern"), n)
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	return e
}

// appendSigns appends n sign events of run R1, with no gateway running, to
// the audit log of the state directory state, and closes it (a checkpoint
// seals them).
func appendSigns(t *testing.T, state string, n int) {
	t.Helper()
	setup, err := audit.LoadSetup(state)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.Open(setup.Config(filepath.Join(state, "audit.log")))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R1", Detail: map[string]string{"n": strconv.Itoa(i), "pad": strings.Repeat("x", 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// The entries after the log's last checkpoint are signed by nothing yet:
// a program that can write the log could have added them. postern
// activity and audit show print them, and say how many there are; once
// a checkpoint seals them (the vault locks) they say nothing more.
func TestHistoryWarnsOfEntriesAfterTheLastCheckpoint(t *testing.T) {
	need(t, "ssh-keygen")
	e := newEnv(t)
	pass := signOnce(e)
	for _, cmd := range [][]string{{"activity"}, {"audit", "show"}} {
		r := e.MustRun("postern", cmd...)
		if !strings.Contains(r.Stderr, "the log's last checkpoint: no signature covers") {
			t.Errorf("postern %s, with a signature after the last checkpoint, warns of nothing:\nstdout:\n%s\nstderr: %s", strings.Join(cmd, " "), r.Stdout, r.Stderr)
		}
		if r := e.MustRun("postern", append(cmd, "--json")...); r.Stderr != "" {
			t.Errorf("postern %s --json wrote to standard error: %s", strings.Join(cmd, " "), r.Stderr)
		}
	}
	e.MustRun("postern", "lock")
	for _, cmd := range [][]string{{"activity"}, {"audit", "show"}} {
		if r := e.MustRun("postern", append(cmd, "--passphrase-file", pass)...); r.Stderr != "" {
			t.Errorf("postern %s, everything sealed, warns: %s", strings.Join(cmd, " "), r.Stderr)
		}
	}
}

// signOnce makes a vault with one key, starts a gateway under approval =
// "none", unlocks it and signs once with ssh-keygen -Y sign; it returns
// the vault's passphrase file.
func signOnce(e *Env) (pass string) {
	pass = e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("k", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	e.Config("approval = \"none\"\n")
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	msg := e.WriteFile("m", "signed", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	return pass
}
