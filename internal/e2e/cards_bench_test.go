package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// BenchmarkCardToConsole measures what a person waits for: the time from
// a sign request that needs approval to its card on an approver's
// console. The gateway (approval = "per-call") runs as the systemd unit
// in contrib runs it (postern agent -D: warnings and errors logged, not
// every request) and holds 100 other pending cards throughout, each a
// sign request waiting on its own connection (counted before the first
// iteration and after the last); the console is "postern approve --json"
// in a session of its own, outside the requester's tree, and the card
// counts as shown when its JSON line reaches the console's standard
// output. Each iteration sends one sign request on an open connection,
// waits for its card there, and has the console approve it once (a
// denial would do as well for the time measured, but the gateway paces
// the denials of one requester: past the third in quick succession its
// requests are refused without a card). The median, the 99th percentile
// and the worst case are reported, and the gateway's and the console's
// CPU time per iteration (the request, its card, the console's answer,
// the signature and the card's removal): wall times on a busy machine
// count waiting for a CPU, the CPU time does not.
func BenchmarkCardToConsole(b *testing.B) {
	need(b, "ssh-keygen", "ssh-add", "setsid")
	e := newEnv(b)
	e.Config("approval = \"per-call\"\ncard_timeout = \"24h\"\n")
	gw := e.startQuietAgentAt(e.Path("run", "postern", "agent.sock"))
	key := e.Keygen("k", "ed25519", 0, "")
	pub, _, _, _, err := ssh.ParseAuthorizedKey(mustRead(b, key+".pub"))
	if err != nil {
		b.Fatal(err)
	}
	e.AddKey(key)

	out, answers := startOutsideConsoleTo(b, e, "approve", "--json")
	consolePID, err := strconv.Atoi(strings.TrimSpace(string(mustRead(b, e.Path("console.pid")))))
	if err != nil {
		b.Fatal(err)
	}
	shown := make(chan shownCard, 16)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			at := time.Now()
			if line := sc.Bytes(); len(line) > 0 && line[0] == '{' {
				var c struct{ ID string }
				if json.Unmarshal(line, &c) == nil {
					shown <- shownCard{c.ID, at}
				}
			}
		}
		close(shown)
	}()
	waitShown := func() shownCard {
		select {
		case c, ok := <-shown:
			if !ok {
				b.Fatal("the console stopped")
			}
			return c
		case <-time.After(time.Minute):
			b.Fatalf("no card on the console\n%s", gw.Log())
		}
		return shownCard{}
	}
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	const pending = 100
	for range pending {
		cl, c := dialAgent(b, gw.Socket)
		b.Cleanup(func() { c.Close() })
		go cl.Sign(pub, data)
		waitShown()
	}

	if n := pendingCards(b, e); n != pending {
		b.Fatalf("%d cards pending before the first iteration, not %d", n, pending)
	}

	cl, c := dialAgent(b, gw.Socket)
	defer c.Close()
	var took []time.Duration
	gwCPU, consoleCPU := procCPU(b, gw.PID()), procCPU(b, consolePID)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		signed := make(chan error, 1)
		start := time.Now()
		go func() { _, err := cl.Sign(pub, data); signed <- err }()
		card := waitShown()
		took = append(took, card.at.Sub(start))
		b.StopTimer()
		answers.WriteString("once " + card.id + "\n")
		if err := <-signed; err != nil {
			b.Fatalf("approved once, the signature failed: %v", err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64((procCPU(b, gw.PID())-gwCPU).Microseconds())/float64(b.N), "gateway-cpu-µs/op")
	b.ReportMetric(float64((procCPU(b, consolePID)-consoleCPU).Microseconds())/float64(b.N), "console-cpu-µs/op")
	// The cards answered went away; the 100 others were pending throughout.
	after := pendingCards(b, e)
	if after != pending {
		b.Fatalf("%d cards pending after the last iteration, not %d", after, pending)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "worst-µs")
	b.ReportMetric(float64(after), "pending-cards")
}

// pendingCards counts the cards the gateway holds pending, as "postern
// approve --list --json" lists them.
func pendingCards(b *testing.B, e *Env) int {
	r := e.Run("postern", "approve", "--list", "--json")
	var cards []json.RawMessage
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &cards) != nil {
		b.Fatalf("listing the pending cards: %d %s%s", r.Code, r.Stdout, r.Stderr)
	}
	return len(cards)
}

type shownCard struct {
	id string
	at time.Time
}

// procCPU returns the CPU time process pid has used (user and system).
func procCPU(b *testing.B, pid int) time.Duration {
	f := strings.Fields(string(mustRead(b, fmt.Sprintf("/proc/%d/stat", pid))))
	// utime and stime are fields 14 and 15, in clock ticks (100 a second).
	u, _ := strconv.Atoi(f[13])
	s, _ := strconv.Atoi(f[14])
	return time.Duration(u+s) * 10 * time.Millisecond
}
