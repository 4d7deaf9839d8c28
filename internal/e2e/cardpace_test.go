package e2e

// How many cards a run may put in front of the person: cards withdrawn
// in a loop, and cards denied in a row.

import (
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
	mostlyWaits(t)
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
			// Requests until the cooldown starts (stop): a requester may
			// be gone before the gateway identifies it, and is then
			// refused without a card. Where it exits at once, 26 of 40
			// were, once, and most of 80 on a machine that three busy
			// loops held.
			stop := e.Path("stop")
			const most = 400
			job := d.Start(fmt.Sprintf("for i in $(seq %d); do [ -e %s ] && break; %s; done; echo $i > %s.sent", most, stop, request, stop))
			deadline := time.Now().Add(3 * time.Minute)
			for !strings.Contains(a.Log(), cooldownStarted) && !job.Done() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			os.WriteFile(stop, nil, 0o644)
			job.Wait()
			sent := strings.TrimSpace(string(mustRead(t, stop+".sent")))
			// Eight withdrawals at once, then one every 6 s: the ninth
			// starts the cooldown, unless the machine was so slow that the
			// loop took 6 s or more to get there (one more each 6 s).
			// The cards shown before it are those withdrawn, the one
			// whose withdrawal started it, and any up at once with that
			// one: the loop's next requester may come before the
			// gateway has seen the one before it go (a goroutine of its
			// own watches each), and a run may have up to eight up at
			// once. Cards after the cooldown are not counted: a loop
			// that outlasts it may put up more.
			a.WaitLog(t, cooldownStarted)
			log := a.Log()
			n, withdrawn, span := cardsBefore(t, log, cooldownStarted)
			if allowed := 8 + int(span/(6*time.Second)); withdrawn < 8 || withdrawn > allowed || n <= withdrawn || n > withdrawn+8 {
				t.Fatalf("%s requests withdrawn once their cards were up put up %d cards in %s before the cooldown, %d of them withdrawn; want 8 withdrawn (at most %d in that time), and at most 8 more up when it started:\n%s",
					sent, n, span, withdrawn, allowed, log)
			}
			if log := a.Log(); !strings.Contains(log, "reason="+string(tc.why)) || strings.Contains(log, "reason="+string(tc.notWhy)) {
				t.Fatalf("the withdrawals were not refused as %s:\n%s", tc.why, log)
			}
		})
	}
}

// cooldownStarted is what a gateway logs when a run's withdrawals start
// its cooldown.
const cooldownStarted = "cards withdrawn faster than a person reads them"

// cardsBefore counts the cards a gateway's log says it showed before
// its first line that holds stop, how many of them were withdrawn before
// that line (the requester's refusal is logged before it), and the time
// from the first card to the last.
func cardsBefore(t *testing.T, log, stop string) (n, withdrawn int, span time.Duration) {
	t.Helper()
	var first, last time.Time
	shown := map[string]bool{} // pids with a card up
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, stop) {
			break
		}
		pid := logField(line, "pid")
		switch {
		case strings.Contains(line, `msg="card shown"`):
			at := lineTime(t, line)
			if n == 0 {
				first = at
			}
			last, n = at, n+1
			shown[pid] = true
		case strings.Contains(line, `msg="refused to sign"`) && shown[pid]:
			delete(shown, pid)
			withdrawn++
		}
	}
	return n, withdrawn, last.Sub(first)
}

// logField is the value of field key on a line of a gateway's log.
func logField(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// lastLineTime is the time of the last line of a gateway's log that
// holds s.
func lastLineTime(t *testing.T, log, s string) time.Time {
	t.Helper()
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lineTime(t, lines[i])
		}
	}
	t.Fatalf("the log has no line with %q:\n%s", s, log)
	return time.Time{}
}

// lineTime is the time a line of a gateway's log was written.
func lineTime(t *testing.T, line string) time.Time {
	t.Helper()
	stamp, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		t.Fatalf("a log line without its time: %q", line)
	}
	return at
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

	// The second request is made once the first has its card (a loaded
	// machine may start the first later than a second started a moment
	// after it), and joins that card while the test waits.
	d := e.StartRun("coder")
	second := filepath.Join(d.dir, "second")
	job := d.Start(fmt.Sprintf("ssh-add -T %[1]s.pub & until [ -e %[2]s ]; do sleep 0.05; done; ssh-add -T %[1]s.pub && echo signed; wait", key, second))
	c := e.WaitCard()
	if err := os.WriteFile(second, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if c.Requester[0].Name != "ssh-add" {
		t.Fatalf("card %s shows %+v, not the first ssh-add", c.ID, c.Requester[0])
	}
	if err := syscall.Kill(c.Requester[0].PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the request card %s was shown for: %v", c.ID, err)
	}
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
// 5 s. (Nine withdrawals spread over more than the pace's 6 s earn a
// tenth card, which TestRunCannotFlashCards allows for.)
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
