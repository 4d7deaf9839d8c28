package e2e

// Where cards reach a person: a desktop notification from a real
// notification daemon (dunst under Xvfb, clicked with a real pointer
// event), a console, or nobody at all, in which case the request is
// refused at once with no_approver.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/notify/notifytest"
)

// signJob starts ssh-keygen -Y sign with the agent's key in the
// background; wait returns its result.
func signJob(t *testing.T, e *Env, key string) (wait func() Result) {
	msg := e.WriteFile("m", "x", 0o600)
	cmd := e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", key+".pub", msg)
	done := make(chan Result, 1)
	go func() {
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		done <- Result{Stdout: string(out), Code: code}
	}()
	return func() Result {
		select {
		case r := <-done:
			return r
		case <-time.After(60 * time.Second):
			t.Fatal("ssh-keygen -Y sign did not finish")
		}
		return Result{}
	}
}

// desktopEnv starts a desktop whose notification daemon invokes
// clickAction on a click, and a test environment that reaches it.
func desktopEnv(t *testing.T, clickAction string) (*notifytest.Desktop, *Env) {
	d := notifytest.Start(t, clickAction)
	e := newEnv(t)
	for _, kv := range d.Env() {
		k, v, _ := strings.Cut(kv, "=")
		e.Setenv(k, v)
	}
	return d, e
}

// desktopAgent starts a desktop as desktopEnv does, and an agent with
// config that holds one Ed25519 key, k (its path).
func desktopAgent(t *testing.T, clickAction, config string) (d *notifytest.Desktop, e *Env, a *Agent, k string) {
	need(t, "ssh-add", "ssh-keygen")
	d, e = desktopEnv(t, clickAction)
	e.Config(config)
	a = e.StartAgent()
	k = e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	return d, e, a, k
}

// readCard waits as a person reads a card before approving it: the
// gateway takes no approval clicked before approvals.ReadTime.
func readCard() { time.Sleep(approvals.ReadTime + 100*time.Millisecond) }

func TestNotificationApprovesOnce(t *testing.T) {
	d, e, a, k := desktopAgent(t, "approve-once", `approval = "session"`)
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "notification  yes") {
		t.Fatalf("status does not list the notification service as reachable:\n%s", st)
	}

	start := time.Now()
	wait := signJob(t, e, k)
	d.WaitDisplayed(1, 10*time.Second)
	t.Logf("request to notification on screen: %s", time.Since(start))
	readCard()
	d.Click()
	if r := wait(); r.Code != 0 {
		t.Fatalf("sign after Approve once: %s\nagent log:\n%s", r, a.Log())
	}
	if !strings.Contains(a.Log(), "approver=\"notification: pid=") {
		t.Errorf("the answer is not logged as the notification daemon's:\n%s", a.Log())
	}
	// Once means once: the next use asks again.
	wait = signJob(t, e, k)
	d.WaitDisplayed(1, 10*time.Second)
	readCard()
	d.Click()
	if r := wait(); r.Code != 0 {
		t.Fatalf("second sign: %s", r)
	}
}

// A notification that pops up under the pointer takes the click meant for
// what was there: Approve once clicked before a person could read the
// card approves nothing, and the request is refused when the card times
// out.
//
// The gateway counts the time from the notification service's answer,
// and the click when it hears of it: on a loaded machine, the service
// may draw the notification, or tell of the click, more than
// approvals.ReadTime later. A click taken that long after the card
// showed proves nothing either way, and the attempt is made again.
func TestNotificationClickedAtOnceApprovesNothing(t *testing.T) {
	mostlyWaits(t)
	d, e, a, k := desktopAgent(t, "approve-once", "approval = \"session\"\ncard_timeout = \"3s\"")
	for attempt := 1; ; attempt++ {
		wait := signJob(t, e, k)
		d.WaitDisplayed(1, 10*time.Second)
		d.Click()
		if r := wait(); r.Code != 0 {
			return
		}
		log := a.Log()
		if took := lastLineTime(t, log, `msg="card answered"`).Sub(lastLineTime(t, log, `msg="card shown"`)); took < approvals.ReadTime {
			t.Fatalf("signed after Approve once clicked as the notification appeared, %s after the card showed\nagent log:\n%s", took, log)
		}
		if attempt == 5 {
			t.Fatalf("in %d attempts, each click reached the gateway %s or more after its card showed\nagent log:\n%s", attempt, approvals.ReadTime, log)
		}
		d.WaitDisplayed(0, 10*time.Second)
	}
}

// When a notification goes away, the ones below it move up, and one of
// them takes the click meant for it: Approve once clicked right after
// another notification of postern went away approves nothing, however
// long its own notification was up. (A click that reaches the gateway
// later, on a loaded machine, approves: the test tries again.)
func TestNotificationClickedAsAnotherWentApprovesNothing(t *testing.T) {
	mostlyWaits(t)
	d, e, a, k := desktopAgent(t, "approve-once", "approval = \"session\"\ncard_timeout = \"4s\"")
	msg := e.WriteFile("m1", "x", 0o600)
	for attempt := 1; ; attempt++ {
		first := e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		d.WaitDisplayed(1, 10*time.Second)
		wait := signJob(t, e, k)
		d.WaitDisplayed(2, 10*time.Second)
		readCard()
		first.Process.Kill()
		first.Wait()
		d.WaitDisplayed(1, 10*time.Second)
		d.Click()
		r := wait()
		log := a.Log()
		if r.Code != 0 {
			if !strings.Contains(log, "notification approval not taken") {
				t.Fatalf("the click was not refused as too soon; the request failed otherwise: %s\nagent log:\n%s", r, log)
			}
			return
		}
		// The other notification went as the first request's card was
		// withdrawn, a moment before or after the request's refusal
		// (canceled) was written: allow the moment 200 ms.
		if took := lastLineTime(t, log, `msg="card answered"`).Sub(lastLineTime(t, log, "reason=canceled")); took < approvals.ReadTime-200*time.Millisecond {
			t.Fatalf("signed after Approve once clicked as the notification above went away, %s after it went\nagent log:\n%s", took, log)
		}
		if attempt == 5 {
			t.Fatalf("in %d attempts, each click reached the gateway %s or more after the other notification went\nagent log:\n%s", attempt, approvals.ReadTime, log)
		}
		d.WaitDisplayed(0, 10*time.Second)
	}
}

func TestNotificationDenies(t *testing.T) {
	d, e, _, k := desktopAgent(t, "deny", `approval = "per-call"`)
	wait := signJob(t, e, k)
	d.WaitDisplayed(1, 10*time.Second)
	d.Click()
	if r := wait(); r.Code == 0 {
		t.Fatal("signed after Deny")
	}
}

// With no console, no notification service and no askpass, a request
// that needs a card is refused at once, and status says why.
func TestNoApprover(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Unsetenv("DBUS_SESSION_BUS_ADDRESS")
	e.Unsetenv("SSH_ASKPASS")
	e.Config(`approval = "session"` + "\ncard_timeout = \"60s\"\n")
	a := e.StartAgent()
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	start := time.Now()
	if r := signJob(t, e, k)(); r.Code == 0 {
		t.Fatal("signed with nobody to ask")
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the refusal waited %s: it waited for the card to time out", time.Since(start))
	}
	// The log arrives through a pipe: it may trail the refusal a little.
	a.WaitLog(t, "no approver can show the card")
	r := e.MustRun("postern", "status", "--json")
	var st struct {
		Approvers []struct {
			Name      string
			Reachable bool
		}
		LastNoApprover string `json:"last_no_approver"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.LastNoApprover == "" {
		t.Errorf("status --json has no last_no_approver:\n%s", r.Stdout)
	}
	for _, ap := range st.Approvers {
		if ap.Reachable {
			t.Errorf("approver %s reachable:\n%s", ap.Name, r.Stdout)
		}
	}
	text := e.MustRun("postern", "status").Stdout
	if !strings.Contains(text, "no_approver") {
		t.Errorf("status does not say requests are refused:\n%s", text)
	}

	// A console attached: the card shows there, and is answered.
	c := e.StartConsole()
	wait := signJob(t, e, k)
	card := e.WaitCard()
	waitFor(t, func() bool { return strings.Contains(c.Output(), "Card "+card.ID) })
	c.Send("once " + card.ID)
	if r := wait(); r.Code != 0 {
		t.Fatalf("sign approved in the line console: %s\nconsole:\n%s", r, c.Output())
	}
	waitFor(t, func() bool { return strings.Contains(c.Output(), card.ID+": approved once") })
}
