package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The seed's sequence, produced by a real run: approve, restart the
// gateway, denied, re-approve, sign; postern activity shows it in that
// order, with those reasons.
func TestAuditSeedSequence(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "first login", job.Wait())

	w.agent.Stop()
	w.agent = w.e.StartAgent()
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	job = a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	w.e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("signed after a restart without approval")
	}
	job = a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "re-approved login", job.Wait())

	out := w.e.MustRun("postern", "activity", "--passphrase-file", w.pass).Stdout
	want := []*regexp.Regexp{
		regexp.MustCompile(`session_approved run=(R[0-9a-f]+)`),
		regexp.MustCompile(`sign run=R[0-9a-f]+`),
		regexp.MustCompile(`gateway_restarted`),
		regexp.MustCompile(`action_denied run=R[0-9a-f]+ .*reason=gateway_restarted`),
		regexp.MustCompile(`session_approved run=R[0-9a-f]+`),
		regexp.MustCompile(`sign run=R[0-9a-f]+`),
	}
	lines := strings.Split(out, "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && want[i].MatchString(l) {
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("activity lacks %q (in order):\n%s", want[i], out)
	}
	// The restart is recorded with the previous boot id.
	if !regexp.MustCompile(`gateway_restarted .*prev(ious)?_boot=`).MatchString(out) {
		t.Errorf("gateway_restarted without the previous boot id:\n%s", out)
	}

	// --json: one object per line.
	js := w.e.MustRun("postern", "activity", "--json", "--passphrase-file", w.pass).Stdout
	for _, l := range strings.Split(strings.TrimSpace(js), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || v["type"] == nil {
			t.Fatalf("activity --json line %q: %v", l, err)
		}
	}
	// --run: that run's events only, the approval and the signatures
	// included; --since in the future: nothing.
	run := want[0].FindStringSubmatch(out)[1]
	byRun := w.e.MustRun("postern", "activity", "--run", run, "--passphrase-file", w.pass).Stdout
	if !strings.Contains(byRun, "session_approved run="+run) || !strings.Contains(byRun, "sign run="+run) {
		t.Errorf("activity --run %s lacks the run's approval or signature:\n%s", run, byRun)
	}
	for _, l := range strings.Split(strings.TrimSpace(byRun), "\n") {
		if !strings.Contains(l, "run="+run) {
			t.Errorf("activity --run %s shows another event: %s", run, l)
		}
	}
	if later := w.e.MustRun("postern", "activity", "--since", time.Now().Add(time.Hour).Format(time.RFC3339), "--passphrase-file", w.pass).Stdout; !regexp.MustCompile(`^no events since [0-9-]+ [0-9:]+ in the audit log\n$`).MatchString(later) {
		t.Errorf("activity --since an hour from now:\n%s", later)
	}
	// sessions --history: who was approved, and why it ended.
	hist := w.e.MustRun("postern", "sessions", "--history", "--passphrase-file", w.pass).Stdout
	if !strings.Contains(hist, "gateway_restarted") && !strings.Contains(hist, "gateway_stopped") {
		t.Errorf("sessions --history does not say why the first approval ended:\n%s", hist)
	}

	// Offline verification, pinned with the key vault init printed.
	w.agent.Stop()
	pin := strings.TrimSpace(string(mustRead(t, w.e.Path("state", "postern", "audit.pin"))))
	v := w.e.MustRun("postern", "audit", "verify", "--pin", pin)
	if !strings.Contains(v.Stdout, ": OK") || !strings.Contains(v.Stdout, "matches the key given with --pin") {
		t.Fatalf("verify:\n%s", v.Stdout)
	}
}

func TestAuditVerifyDetectsTampering(t *testing.T) {
	w := newApprovalWorld(t, "approval = \"none\"\n")
	for i := 0; i < 3; i++ {
		mustSucceed(t, "login", w.e.Run("ssh", w.sshd.SSHArgs(w.sshd.Target(), "true")...))
	}
	w.agent.Stop()
	log := w.e.Path("state", "postern", "audit.log")
	good := mustRead(t, log)
	var rep struct {
		OK      bool  `json:"ok"`
		Entries int   `json:"entries"`
		Bytes   int64 `json:"bytes"`
	}
	r := w.e.MustRun("postern", "audit", "verify", "--json", log)
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || !rep.OK || rep.Entries < 5 {
		t.Fatalf("honest log: %v %+v\n%s", err, rep, r.Stdout)
	}
	// The log's first segment is pre-allocated: records, then zeros.
	if rep.Bytes <= 0 || int64(len(good)) <= rep.Bytes {
		t.Fatalf("records end at %d of %d bytes", rep.Bytes, len(good))
	}
	// A flipped byte in the middle is tampering: exit 3, the record named.
	bad := append([]byte(nil), good...)
	bad[rep.Bytes/2] ^= 0x40
	os.WriteFile(log, bad, 0o600)
	r = w.e.Run("postern", "audit", "verify", log)
	if r.Code != 3 || !strings.Contains(r.Stdout, "first bad record: seq") {
		t.Fatalf("tampered log: %s", r)
	}
	// A gateway refuses to start over a damaged log.
	a := w.e.Command("postern", "agent", "-D", "-a", w.e.Path("run", "other.sock"))
	out, err := a.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "audit") {
		t.Fatalf("gateway started over a damaged audit log: %s", out)
	}
	// A torn tail (a crash mid-write) is only a warning. The record torn
	// here is the last checkpoint, whose anchor the gateway wrote beside
	// the log once it was durable: a crash that tore it would have left no
	// such anchor, so it goes too (with it, the log ends before an anchor,
	// and that is a failure: see anchor_test.go).
	os.WriteFile(log, good[:rep.Bytes-7], 0o600)
	os.Remove(filepath.Join(filepath.Dir(log), "audit.anchor"))
	r = w.e.Run("postern", "audit", "verify", log)
	if r.Code != 0 || !strings.Contains(r.Stdout, "torn") {
		t.Fatalf("torn tail: %s", r)
	}
}
