package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"
)

// BenchmarkUpstreamSign signs with an Ed25519 key that only OpenSSH's
// ssh-agent holds, asked directly and through "postern agent -D --upstream"
// gating it, its vault unlocked and its audit log on (approval = "none":
// the protocol, the peer's re-check, the lookup, the decision, the durable
// record and the forwarding are measured, not a person), in
// turn, and reports the medians and what the gate adds to the upstream's
// own latency (seq-extra-µs, conn-extra-µs; the goal is at most 100 µs):
//
//   - sequential, one connection signing in turn;
//   - a new connection per signature (what ssh does per login; through
//     the gate this also opens the gate's own connection upstream).
//
// gate-cpu-µs is the CPU time the gate spent per signature it forwarded
// (all its threads, from /proc/PID/task/*/schedstat): on a busy machine
// the medians also measure waiting for a CPU, this does not.
//
// The relay (relay_test.go), a process that only passes requests and
// answers on, is measured in the same rounds: what any agent in front of
// another adds here (seq-relay-extra-µs, conn-relay-extra-µs, and its
// relay-cpu-µs), the floor under the gate's figures.
//
// The ways take turns signature by signature, each turn in another
// order, and what the gate (or the relay) adds is the median of the
// differences within each turn: the upstream's own speed drifts on a
// busy machine (ssh-agent signs with OpenSSH's portable Ed25519, about
// 600 µs of CPU), and a turn's signatures are measured within a few
// milliseconds of each other. b.N counts rounds; a round is 40 turns of
// one signature per way on the ways' open connections, then 10 turns of
// one new connection per way.
func BenchmarkUpstreamSign(b *testing.B) {
	agents := startBenchAgents(b)
	direct := agents[0] // OpenSSH's ssh-agent
	// The gate in the configuration "postern vault init" gives: vault
	// unlocked, audit log on, as the systemd unit runs it.
	e := newEnv(b)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "bench\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	gate := e.startQuietAgentAt(e.Path("run", "gate", "agent.sock"), "--upstream", direct.sock)
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	auditLog := e.Path("state", "postern", "audit.log")
	before := auditRecords(b, e, auditLog)
	relay := startRelay(b, e.Path("run", "relay.sock"), direct.sock)
	pub := direct.keys["ed25519"]
	ways := []struct{ name, sock string }{{"direct", direct.sock}, {"relay", e.Path("run", "relay.sock")}, {"gated", gate.Socket}}
	clients := map[string]agent.ExtendedAgent{}
	for _, w := range ways {
		cl, c := dialAgent(b, w.sock)
		defer c.Close()
		if _, err := cl.Sign(pub, signData); err != nil {
			b.Fatalf("%s: %v", w.name, err)
		}
		clients[w.name] = cl
	}
	const perRound = 40
	seq := map[string][]time.Duration{}
	perConn := map[string][]time.Duration{}
	gated := 0
	// turn signs once per way, in an order that moves on each turn.
	turn := func(n int, into map[string][]time.Duration, sign func(name, sock string)) {
		for j := range ways {
			w := ways[(n+j)%len(ways)]
			into[w.name] = append(into[w.name], timed(func() { sign(w.name, w.sock) }))
		}
	}
	cpu0, relayCPU0 := cpuNanos(b, gate.PID()), cpuNanos(b, relay.Process.Pid)
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for i := 0; i < perRound; i++ {
			turn(i, seq, func(name, _ string) {
				if _, err := clients[name].Sign(pub, signData); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
			})
		}
		for i := 0; i < perRound/4; i++ {
			turn(i, perConn, func(name, sock string) {
				cl, c := dialAgent(b, sock)
				defer c.Close()
				if _, err := cl.Sign(pub, signData); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
			})
		}
		gated += perRound + perRound/4
	}
	b.StopTimer()
	b.ReportMetric(us(cpuNanosSince(b, gate.PID(), cpu0))/float64(gated), "gate-cpu-µs")
	b.ReportMetric(us(cpuNanosSince(b, relay.Process.Pid, relayCPU0))/float64(gated), "relay-cpu-µs")
	for _, w := range ways {
		b.ReportMetric(us(median(seq[w.name])), "seq-"+w.name+"-µs")
		b.ReportMetric(us(median(perConn[w.name])), "conn-"+w.name+"-µs")
	}
	b.ReportMetric(us(medianExtra(seq["gated"], seq["direct"])), "seq-extra-µs")
	b.ReportMetric(us(medianExtra(perConn["gated"], perConn["direct"])), "conn-extra-µs")
	b.ReportMetric(us(medianExtra(seq["relay"], seq["direct"])), "seq-relay-extra-µs")
	b.ReportMetric(us(medianExtra(perConn["relay"], perConn["direct"])), "conn-relay-extra-µs")
	if after := auditRecords(b, e, auditLog); after.Records-before.Records < int64(gated) {
		b.Fatalf("%d signatures through the gate added %d records to its audit log", gated, after.Records-before.Records)
	}
}

// medianExtra is the median of the differences a[i]-b[i]: what a took
// more than b, measured in the same turns.
func medianExtra(a, b []time.Duration) time.Duration {
	d := make([]time.Duration, min(len(a), len(b)))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return median(d)
}

// cpuNanos returns the CPU time all of a process's threads have used, in
// nanoseconds, from /proc/PID/task/*/schedstat.
func cpuNanos(b *testing.B, pid int) int64 {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("no schedstat for pid %d", pid)
	}
	var total int64
	for _, p := range tasks {
		s, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that ended
		}
		n, _ := strconv.ParseInt(strings.Fields(string(s))[0], 10, 64)
		total += n
	}
	return total
}

func cpuNanosSince(b *testing.B, pid int, from int64) time.Duration {
	return time.Duration(cpuNanos(b, pid) - from)
}
