package e2e

// The approval invariants of DESIGN.md, end to end: real ssh against a
// real sshd, from runs launched with "postern run", answered with
// "postern approve" from outside the runs.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
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
