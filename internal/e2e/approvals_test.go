package e2e

// The approval invariants of DESIGN.md, end to end: real ssh against a
// real sshd, from runs launched with "postern run", answered with
// "postern approve" from outside the runs.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// approvalWorld is a gateway whose key lives in the vault, and an sshd
// that accepts it.
type approvalWorld struct {
	e     *Env
	agent *Agent
	sshd  *SSHD
	key   string
	pass  string
}

func newApprovalWorld(t testing.TB, config string, aliases ...string) *approvalWorld {
	return newApprovalWorldSSHD(t, "", config, aliases...)
}

// newApprovalWorldSSHD is newApprovalWorld with extra sshd_config lines.
func newApprovalWorldSSHD(t testing.TB, sshdExtra, config string, aliases ...string) *approvalWorld {
	return newApprovalWorldOn(t, systemOpenSSH(t), sshdExtra, config, aliases...)
}

// newApprovalWorldOn is newApprovalWorldSSHD with the sshd of o.
func newApprovalWorldOn(t testing.TB, o OpenSSH, sshdExtra, config string, aliases ...string) *approvalWorld {
	need(t, "ssh-keygen")
	e := newEnv(t)
	w := &approvalWorld{e: e}
	w.pass = e.WriteFile("pass", "vault pass\n", 0o600)
	w.key = e.Keygen("agent-key", "ed25519", 0, "")
	e.MustRun("postern", "vault", "init", "--passphrase-file", w.pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", w.pass, w.key)
	os.Remove(w.key)
	w.sshd = startSSHDOn(t, o, pubKey(t, w.key)+"\n", sshdExtra, aliases...)
	e.Config(fmt.Sprintf("known_hosts = [%q]\n%s", w.sshd.KnownHosts, config))
	w.agent = e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	e.StartConsole()
	return w
}

// sshCmd is a shell command that logs in to s and runs true.
func sshCmd(s *SSHD, extra ...string) string {
	return "ssh " + strings.Join(s.SSHArgs(append(extra, s.Target(), "true")...), " ")
}

func (w *approvalWorld) accepted() int {
	return strings.Count(w.sshd.Log(), "Accepted publickey")
}

func (w *approvalWorld) approve(id string, how ...string) {
	w.e.t.Helper()
	w.e.MustRun("postern", append([]string{"approve", id}, how...)...)
}

func mustSucceed(t *testing.T, what string, r Result) {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: %s", what, r)
	}
}

// 1. Kill an approved run and start a replacement with the same label and
// command: it is asked again (process_changed), and nothing is signed
// before the answer.
func TestReplacementRunIsAskedAgain(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	if c.Reason != "new" || c.Mode != "session" || c.Run.Label != "coder" || c.Run.PID != a.PID() {
		t.Fatalf("first card: %+v (run pid %d)", c, a.PID())
	}
	if c.Requester[0].Name != "ssh" {
		t.Fatalf("requester chain: %+v", c.Requester)
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "approved ssh", job.Wait())
	mustSucceed(t, "ssh inside the session", a.Do(sshCmd(w.sshd)))
	w.e.NoCard()

	a.Stop()
	b := w.e.StartRun("coder")
	before := w.accepted()
	job = b.Start(sshCmd(w.sshd))
	c = w.e.WaitCard()
	if c.Reason != "REAUTH_REQUIRED process_changed" || !strings.Contains(c.Changed, "new process") {
		t.Fatalf("replacement card: %+v", c)
	}
	time.Sleep(300 * time.Millisecond)
	if job.Done() || w.accepted() != before {
		t.Fatal("the replacement got in before the answer")
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "replacement after approval", job.Wait())
}

// 2. Restart the gateway while an approved run stays alive and signs
// again: denied until re-approved (gateway_restarted). The run's socket
// is served again also after a gateway killed as a crash would (SIGKILL:
// it never stopped).
func TestGatewayRestartEndsApproval(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*Agent)
	}{{"stopped", (*Agent).Stop}, {"killed", (*Agent).Kill}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newApprovalWorld(t, "")
			a := w.e.StartRun("coder")
			job := a.Start(sshCmd(w.sshd))
			w.approve(w.e.WaitCard().ID, "--session")
			mustSucceed(t, "before the restart", job.Wait())

			tc.stop(w.agent)
			w.agent = w.e.StartAgent()
			w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
			before := w.accepted()
			job = a.Start(sshCmd(w.sshd))
			c := w.e.WaitCard()
			if c.Reason != "REAUTH_REQUIRED gateway_restarted" || !strings.Contains(c.Changed, "The gateway restarted") {
				t.Fatalf("card after the restart: %+v", c)
			}
			// Served again as the confined run "postern run" launched
			// (its process the child of the run's helper).
			if text := w.e.MustRun("postern", "approve", "--list").Stdout; !strings.Contains(text, "Confinement: confined: namespaces") {
				t.Fatalf("the card after the restart does not say the run is confined:\n%s", text)
			}
			time.Sleep(300 * time.Millisecond)
			if job.Done() || w.accepted() != before {
				t.Fatal("the old approval survived the restart")
			}
			w.e.MustRun("postern", "deny", c.ID)
			if r := job.Wait(); r.Code == 0 {
				t.Fatal("signed after a deny")
			}
			w.agent.WaitLog(t, "reason=denied")
			mustSucceed(t, "re-approved", func() Result {
				job := a.Start(sshCmd(w.sshd))
				w.approve(w.e.WaitCard().ID, "--session")
				return job.Wait()
			}())
		})
	}
}

// 3. Lock and unlock the vault while an approved run waits to retry:
// refused while locked, never executed on unlock, asked again after
// unlock (vault_state_changed).
func TestLockUnlockEndsApproval(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "before the lock", job.Wait())

	w.e.MustRun("postern", "lock")
	before := w.accepted()
	start := time.Now()
	if r := a.Do(sshCmd(w.sshd)); r.Code == 0 {
		t.Fatal("signed while locked")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("a request waited while the vault was locked")
	}
	w.e.NoCard()
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	time.Sleep(300 * time.Millisecond)
	w.e.NoCard()
	if w.accepted() != before {
		t.Fatal("something was signed on unlock")
	}
	job = a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	if c.Reason != "REAUTH_REQUIRED vault_state_changed" {
		t.Fatalf("card after unlock: %+v", c)
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "after re-approval", job.Wait())
}

// The run's process exits while a program it started waits on a card
// (unconfined, the program lives on, still connected to the run's
// socket): the card is withdrawn with the run, and an answer given after
// the end signs nothing for the program left behind.
func TestRunEndingWithdrawsTheCardsOfItsSocket(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRunWith("coder", "--no-sandbox")
	signed := w.e.Path("signed")
	a.Start(sshCmd(w.sshd) + " && touch " + signed)
	c := w.e.WaitCard()
	before := w.accepted()
	syscall.Kill(a.PID(), syscall.SIGKILL)
	w.agent.WaitLog(t, "run ended")
	r := w.e.Run("postern", "approve", c.ID, "--once")
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(signed); err == nil || w.accepted() != before {
		t.Fatalf("a program the ended run left behind logged in on an answer given after the end (approve: %s)", r)
	}
	if r.Code == 0 {
		t.Fatalf("an answer to the card of a run that had ended was taken: %s", r)
	}
}

// 4. Two identical runs (same binary, same arguments): approving one does
// not cover the other.
func TestIdenticalRunsDoNotShare(t *testing.T) {
	w := newApprovalWorld(t, "")
	a, b := w.e.StartRun(""), w.e.StartRun("")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "run a", job.Wait())
	job = b.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	if c.Run.PID != b.PID() || c.Reason != "new" {
		t.Fatalf("run b's card: %+v", c)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("run b rode run a's approval")
	}
	mustSucceed(t, "run a again", a.Do(sshCmd(w.sshd)))
}

// 5. A per-call host inside an approved session asks on every connection;
// a non-production host rides the session.
func TestPerCallHostInsideSession(t *testing.T) {
	w := newApprovalWorld(t, "", "git-host")
	prodSSHD := startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	w.agent.Reconfigure(t, fmt.Sprintf("known_hosts = [%q, %q]\n[[rule]]\nhost = \"prod-*\"\napproval = \"per-call\"\n", w.sshd.KnownHosts, prodSSHD.KnownHosts))
	// Host rules match the host inventory's names.
	w.e.MustRun("postern", "hosts", "import", "git-host", "prod-db-1")
	git := sshCmd(w.sshd, "-o", "HostKeyAlias=git-host")
	prod := sshCmd(prodSSHD, "-o", "HostKeyAlias=prod-db-1")
	a := w.e.StartRun("coder")
	job := a.Start(git)
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "git-host", job.Wait())
	mustSucceed(t, "git-host in the session", a.Do(git))
	w.e.NoCard()
	for i := 0; i < 2; i++ {
		job := a.Start(prod)
		c := w.e.WaitCard()
		if c.Mode != "per-call" || c.Reason != "per_call" || c.Destination == nil || !contains(c.Destination.Names, "prod-db-1") {
			t.Fatalf("prod card %d: %+v", i, c)
		}
		w.approve(c.ID, "--once")
		mustSucceed(t, "prod", job.Wait())
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// execOnApprovedRun starts a run, approves it for a session, and has
// its process execute a copy of its program, on the same pid.
func execOnApprovedRun(t *testing.T) (*approvalWorld, *Driver) {
	t.Helper()
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "before the exec", job.Wait())
	self, _ := os.Executable()
	cp := w.e.Path("driver-copy")
	if out, err := exec.Command("cp", self, cp).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	pid := a.SelfPID()
	a.Exec(cp)
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", a.PID())); exe != cp {
		t.Fatalf("the run's process executes %s after the exec, want %s", exe, cp)
	}
	if a.SelfPID() != pid {
		t.Fatal("the exec changed the pid")
	}
	return w, a
}

// 6. An exec on the approved pid, a forwarded connection, an approver
// launched from inside the run, an unanswered card: each is refused.
func TestExecOnApprovedRunIsRefused(t *testing.T) {
	w, a := execOnApprovedRun(t)
	if r := a.Do(sshCmd(w.sshd)); r.Code == 0 {
		t.Fatal("an exec'd run kept its approval")
	}
	w.agent.WaitLog(t, "reason=process_changed")
}

// An exec on an approved run that asks nothing more: the person's
// sessions list shows neither the run nor its grant, and the run ends
// as changed (process_changed), not later as exited.
func TestExecOnApprovedRunEndsItInSessions(t *testing.T) {
	w, _ := execOnApprovedRun(t)
	var sess struct {
		Runs   []struct{ ID string } `json:"runs"`
		Grants []struct{ ID string } `json:"grants"`
	}
	out := w.e.MustRun("postern", "sessions", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &sess); err != nil || len(sess.Runs) != 0 || len(sess.Grants) != 0 {
		t.Fatalf("sessions after the run's process executed another program: %v %s", err, out)
	}
	w.agent.WaitLog(t, "reason=process_changed")
}

func TestForwardedConnectionNeverRidesSession(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "local login", job.Wait())
	msg := w.e.WriteFile("fwd-msg", "signed through a forwarded agent\n", 0o644)
	remote := fmt.Sprintf("ssh-keygen -Y sign -n file -f %s.pub %s", w.key, msg)
	job = a.Start("ssh -A " + strings.Join(w.sshd.SSHArgs(w.sshd.Target(), remote), " "))
	c := w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("forwarded request: %+v", c)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatalf("a forwarded request rode the local session: %s", r)
	}
}

// An unconfined run keeps the process tree and terminal session checks
// (a confined one cannot even reach the control socket: see confine_test.go).
func TestApproverInsideTheRunIsRefused(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRunWith("coder", "--no-sandbox")
	job := a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	r := a.Do("postern approve " + c.ID + " --session --socket " + w.agent.Socket)
	if r.Code != 254 || !strings.Contains(r.Stdout, "refused") {
		t.Fatalf("approval from inside the run: %s", r)
	}
	// Detached by a double fork, it is no longer a descendant, but it is
	// still in the run's terminal session.
	out := w.e.Path("detached-approve.out")
	a.Do(fmt.Sprintf("(postern approve %s --session --socket %s > %s 2>&1; echo $? >> %s) &", c.ID, w.agent.Socket, out, out))
	waitFor(t, func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "254") })
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "terminal session") {
		t.Fatalf("detached approval from inside the run: %s", b)
	}
	if job.Done() {
		t.Fatal("the request was decided by its own run")
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "approved from outside", job.Wait())
}

func TestUnansweredCardIsRefused(t *testing.T) {
	w := newApprovalWorld(t, "card_timeout = \"1s\"\ncard_cooldown = \"30s\"\n")
	a := w.e.StartRun("coder")
	start := time.Now()
	if r := a.Do(sshCmd(w.sshd)); r.Code == 0 {
		t.Fatal("an unanswered card signed")
	}
	if time.Since(start) < time.Second {
		t.Fatal("refused before the card timed out")
	}
	w.e.NoCard()
	// The run's next request cools down instead of piling up cards.
	if r := a.Do(sshCmd(w.sshd)); r.Code == 0 {
		t.Fatal("signed during the cooldown")
	}
	w.e.NoCard()
	w.agent.WaitLog(t, "reason=cooldown")
}

// The line approver on a terminal (postern approve --line, driven
// through tmux): it shows the card as it arrives and takes a key press.
func TestInteractiveApprove(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	env := "env -i " + strings.Join(w.e.Environ(), " ")
	term := startTmux(t, w.e, 200, 60, env+" postern approve --line")
	tmux, screen := term.run, term.screen
	job := a.Start(sshCmd(w.sshd))
	waitFor(t, func() bool { return strings.Contains(screen(), "[s]ession, [o]nce, [d]eny") })
	if s := screen(); !strings.Contains(s, "Requested by: ssh (") || !strings.Contains(s, "Destination: host key SHA256:") {
		t.Fatalf("the card on the terminal:\n%s", s)
	}
	tmux("send-keys", "s", "Enter")
	mustSucceed(t, "approved on the terminal", job.Wait())
	waitFor(t, func() bool { return strings.Contains(screen(), "approved for the run") })
}

// revoke and SIGUSR1 end grants at once; the run is asked again.
func TestRevokeEndsGrants(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	approveOnce := func() {
		t.Helper()
		job := a.Start(sshCmd(w.sshd))
		w.approve(w.e.WaitCard().ID, "--session")
		mustSucceed(t, "approved", job.Wait())
	}
	approveOnce()
	var sess struct {
		Grants []struct {
			ID  string `json:"id"`
			Run string `json:"run"`
		} `json:"grants"`
	}
	if err := json.Unmarshal([]byte(w.e.MustRun("postern", "sessions", "--json").Stdout), &sess); err != nil || len(sess.Grants) != 1 {
		t.Fatalf("sessions --json: %v %+v", err, sess)
	}
	if r := w.e.MustRun("postern", "revoke", sess.Grants[0].ID); !strings.Contains(r.Stdout, "revoked 1") {
		t.Fatalf("revoke: %s", r)
	}
	job := a.Start(sshCmd(w.sshd))
	w.e.MustRun("postern", "deny", w.e.WaitCard().ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("a revoked grant still signed")
	}
	approveOnce()
	syscall.Kill(w.agent.PID(), syscall.SIGUSR1)
	w.agent.WaitLog(t, "all keys wiped and grants revoked")
	// SIGUSR1 also locked the vault, as ssh-agent drops its keys.
	if r := w.e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("keys listed after SIGUSR1: %s", r)
	}
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	job = a.Start(sshCmd(w.sshd))
	w.e.MustRun("postern", "deny", w.e.WaitCard().ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatal("SIGUSR1 did not revoke the grant")
	}
	if r := w.e.Run("postern", "revoke", "G00000000"); r.Code == 0 {
		t.Fatal("revoking an unknown grant succeeded")
	}
	approveOnce()
	if r := w.e.MustRun("postern", "revoke", "--all"); !strings.Contains(r.Stdout, "revoked 1") {
		t.Fatalf("revoke --all: %s", r)
	}
}

// Invariant 4: nothing a client presents restores a grant. A process
// outside an approved run that presents the run's id (POSTERN_RUN) or
// points at the run's own socket gets nothing.
func TestClientClaimsRestoreNothing(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "approved run", job.Wait())
	var sess struct {
		Runs []struct {
			ID     string `json:"id"`
			Socket string `json:"socket"`
		} `json:"runs"`
	}
	json.Unmarshal([]byte(w.e.MustRun("postern", "sessions", "--json").Stdout), &sess)
	if len(sess.Runs) != 1 || sess.Runs[0].Socket == "" {
		t.Fatalf("sessions: %+v", sess)
	}
	before := w.accepted()
	// The run's socket, from outside the run: refused at connect.
	cmd := w.e.Command("ssh", w.sshd.SSHArgs(w.sshd.Target(), "true")...)
	cmd.Env = append(cmd.Env, "SSH_AUTH_SOCK="+sess.Runs[0].Socket)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("an outsider used the run's socket: %s", out)
	}
	w.agent.WaitLog(t, "not the run's process or a live descendant")
	// The main socket with the run's id in the environment: a card, as for
	// anyone unknown.
	res := make(chan Result, 1)
	go func() {
		cmd := w.e.Command("ssh", w.sshd.SSHArgs(w.sshd.Target(), "true")...)
		cmd.Env = append(cmd.Env, "POSTERN_RUN="+sess.Runs[0].ID)
		res <- w.e.finish(cmd, "")
	}()
	c := w.e.WaitCard()
	if c.Reason != "new" {
		t.Fatalf("card for a process claiming the run: %+v", c)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if r := <-res; r.Code == 0 {
		t.Fatal("a claimed run id signed")
	}
	if w.accepted() != before {
		t.Fatal("an outsider logged in")
	}
}

// A run that withdraws its requests while their cards are up, in a loop
// (ssh-add -T killed half a second after it asked), would flash cards at
// the person: past 8 withdrawn cards, the run's requests are refused
// without a card for card_cooldown.
//
// The same when each requester sends the first byte of a next request
// before it hangs up: the byte does not hide the hang-up; and when it
// exits while a child of its own keeps the connection open: a requester
// that is gone cannot be signed for. Either way the card does not stay
// up for nobody until card_timeout.
func TestRunCannotFlashCards(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "timeout", "python3")
	py := python(t)
	for _, tc := range []struct {
		name, request string
		why, notWhy   audit.Reason // the reason the withdrawals are refused for, and not
	}{
		{"killed", "timeout -s KILL 0.3 ssh-add -T KEY.pub", audit.ReasonCanceled, audit.ReasonIdentityMismatch},
		{"hung up after sending more", "PYTHON KEY.ask KEY.pub", audit.ReasonCanceled, audit.ReasonIdentityMismatch},
		{"exited, its child holding the connection", "PYTHON KEY.ask KEY.pub fork", audit.ReasonCanceled, audit.ReasonIdentityMismatch},
		// Its card must end while the other program runs (the program
		// gives up after 5 s, and the loop stops).
		{"ran another program on the same pid", "PYTHON KEY.ask KEY.pub exec || break", audit.ReasonIdentityMismatch, audit.ReasonCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.Config("")
			a := e.StartAgent()
			e.StartConsole()
			key := e.Keygen("k", "ed25519", 0, "")
			e.AddKey(key, "-c") // asked about at every use: each request its own card
			os.WriteFile(key+".ask", []byte(askThenHangUp), 0o644)
			d := e.StartRun("coder")
			request := strings.NewReplacer("KEY", key, "PYTHON", py).Replace(tc.request)
			d.Do("for i in $(seq 20); do " + request + "; done; true")
			// Eight withdrawals at once, then one every 6 s: the ninth
			// starts the cooldown, unless the machine was so slow that the
			// loop took 6 s or more to get there (one more each 6 s).
			log := a.Log()
			n, span := cardsShown(t, log)
			if allowed := 9 + int(span/(6*time.Second)); n < 9 || n > allowed {
				t.Fatalf("20 requests withdrawn once their cards were up put up %d cards in %s, want 9 (at most %d in that time):\n%s", n, span, allowed, log)
			}
			a.WaitLog(t, "cards withdrawn faster than a person reads them")
			if log := a.Log(); !strings.Contains(log, "reason="+string(tc.why)) || strings.Contains(log, "reason="+string(tc.notWhy)) {
				t.Fatalf("the withdrawals were not refused as %s:\n%s", tc.why, log)
			}
		})
	}
}

// cardsShown counts the cards a gateway's log says it showed, and the
// time from the first to the last.
func cardsShown(t *testing.T, log string) (n int, span time.Duration) {
	t.Helper()
	var first, last time.Time
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `msg="card shown"`) {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			t.Fatalf("a log line without its time: %q", line)
		}
		if n == 0 {
			first = at
		}
		last, n = at, n+1
	}
	return n, last.Sub(first)
}

// Two requests of a run that ask the same session question wait on one
// card. When the one it was shown for is killed, the card is withdrawn
// and the other asks on a card that shows it, whose approval signs; when
// the card times out, both are refused then (neither waits for an answer
// that can no longer come).
func TestOneCardForTwoRequests(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "timeout")
	e := newEnv(t)
	e.Config("card_timeout = \"3s\"\ncard_cooldown = \"1s\"\n")
	a := e.StartAgent()
	e.StartConsole()
	key := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(key)

	d := e.StartRun("coder")
	job := d.Start(fmt.Sprintf("timeout -s KILL 1 ssh-add -T %[1]s.pub & sleep 0.3; ssh-add -T %[1]s.pub && echo signed; wait", key))
	c := e.WaitCard()
	a.WaitLog(t, "reason=canceled") // the first has gone
	var next cardJSON
	for deadline := time.Now().Add(10 * time.Second); next.ID == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, o := range e.cards() {
			if o.ID == c.ID {
				t.Fatalf("card %s still shows pid %d, which was killed, while another request waits on it\n%s", c.ID, c.Requester[0].PID, a.Log())
			}
			next = o
		}
	}
	if next.ID == "" || next.Requester[0].PID == c.Requester[0].PID || next.Requester[0].Name != "ssh-add" {
		t.Fatalf("the request that stayed asks on %+v, after card %+v was withdrawn\n%s", next, c, a.Log())
	}
	e.MustRun("postern", "approve", next.ID, "--session")
	if r := job.Wait(); !strings.Contains(r.Stdout, "signed") {
		t.Fatalf("the request that stayed was not signed after the session answer:\n%s\n%s", r.Stdout, a.Log())
	}

	d = e.StartRun("other")
	r := d.Do(fmt.Sprintf("for i in 1 2; do (timeout 20 ssh-add -T %s.pub; echo rc=$?) & done; wait", key))
	if strings.Count(r.Stdout, "rc=") != 2 || strings.Contains(r.Stdout, "rc=0") || strings.Contains(r.Stdout, "rc=124") {
		t.Fatalf("two requests on one card that timed out:\n%s\n%s", r.Stdout, a.Log())
	}
}

// python is the Python interpreter python3 runs, named by its own path:
// a wrapper in front of it (pyenv's, say) can take longer to start than
// the interpreter itself, and a loop that must stay quick pays it at
// every turn.
func python(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
		return p
	}
	t.Fatalf("python3: %v %q", err, out)
	return ""
}

// askThenHangUp asks the agent for a signature with the key of the
// public key file argv[1], sends one byte more (the start of a next
// request), and hangs up 0.3 s later, or at the agent's answer.
// With "fork" after it, it exits at once instead, leaving the connection
// to a child that keeps it open for a minute. With "exec", it runs
// another program (sh) on its pid 0.2 s later, the connection kept: that
// program waits for the agent's answer, and fails if none came within
// 5 s. (The loop must stay quick: nine withdrawals spread over more than
// the pace's 6 s would earn a tenth card.)
const askThenHangUp = `import base64, os, socket, struct, sys, time
blob = base64.b64decode(open(sys.argv[1]).read().split()[1])
def s(b): return struct.pack(">I", len(b)) + b
body = bytes([13]) + s(blob) + s(b"data") + struct.pack(">I", 0)
c = socket.socket(socket.AF_UNIX)
c.connect(os.environ["SSH_AUTH_SOCK"])
c.sendall(s(body) + b"\0")
if sys.argv[2:] == ["exec"]:
    time.sleep(0.2)
    os.set_inheritable(c.fileno(), True)
    os.execv("/bin/sh", ["sh", "-c", "timeout 5 head -c 1 <&%d >/dev/null" % c.fileno()])
if sys.argv[2:] == ["fork"]:
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(60)
    os._exit(0)
c.settimeout(0.3)
try:
    c.recv(1)
except socket.timeout:
    pass
c.close()
`

// A run that asks again each time the person says no cannot wear the
// person down until a card is approved by mistake: the third denial in a
// row starts card_cooldown, and its next requests are refused without a
// card. The cards after the first say how many were denied before them.
func TestRunCannotWearThePersonDown(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config("")
	a := e.StartAgent()
	console := e.StartConsole()
	key := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(key, "-c") // asked about at every use: each request its own card
	d := e.StartRun("coder")
	job := d.Start("for i in $(seq 10); do ssh-add -T " + key + ".pub && echo signed; done; true")
	for range 3 {
		e.MustRun("postern", "deny", e.WaitCard().ID)
	}
	if r := job.Wait(); strings.Contains(r.Stdout, "signed") {
		t.Fatalf("a denied run signed:\n%s", r.Stdout)
	}
	if n := strings.Count(a.Log(), `msg="card shown"`); n != 3 {
		t.Fatalf("10 requests, each card denied, put up %d cards, want 3:\n%s", n, a.Log())
	}
	a.WaitLog(t, "cards denied in quick succession")
	for _, want := range []string{"Denied before: this run's last card was denied", "Denied before: this run's last 2 cards were denied"} {
		if !strings.Contains(console.Output(), want) {
			t.Fatalf("the console never said %q:\n%s", want, console.Output())
		}
	}
	if r := d.Do("postern why"); !strings.Contains(r.Stdout, "cooldown") || !strings.Contains(r.Stdout, "denied this run's cards in quick succession") {
		t.Fatalf("postern why in the run:\n%s", r.Stdout)
	}
	// The person sees the cooldown in the list of runs.
	if out := e.MustRun("postern", "sessions").Stdout; !strings.Contains(out, "refused without a card until ") {
		t.Fatalf("postern sessions during the cooldown:\n%s", out)
	}
}
