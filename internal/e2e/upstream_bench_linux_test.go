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
// rounds that alternate between the two, and reports the medians and
// what the gate adds to the upstream's own latency (seq-extra-µs,
// conn-extra-µs; the goal is at most 100 µs):
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
// b.N counts rounds; a round is 40 signatures per way and mode.
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
	cpu0, relayCPU0 := cpuNanos(b, gate.PID()), cpuNanos(b, relay.Process.Pid)
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for _, w := range ways {
			cl := clients[w.name]
			for i := 0; i < perRound; i++ {
				seq[w.name] = append(seq[w.name], timed(func() {
					if _, err := cl.Sign(pub, signData); err != nil {
						b.Fatalf("%s: %v", w.name, err)
					}
				}))
			}
			for i := 0; i < perRound/4; i++ {
				perConn[w.name] = append(perConn[w.name], timed(func() {
					cl, c := dialAgent(b, w.sock)
					defer c.Close()
					if _, err := cl.Sign(pub, signData); err != nil {
						b.Fatalf("%s: %v", w.name, err)
					}
				}))
			}
			if w.name == "gated" {
				gated += perRound + perRound/4
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(us(cpuNanosSince(b, gate.PID(), cpu0))/float64(gated), "gate-cpu-µs")
	b.ReportMetric(us(cpuNanosSince(b, relay.Process.Pid, relayCPU0))/float64(gated), "relay-cpu-µs")
	for _, w := range ways {
		b.ReportMetric(us(median(seq[w.name])), "seq-"+w.name+"-µs")
		b.ReportMetric(us(median(perConn[w.name])), "conn-"+w.name+"-µs")
	}
	b.ReportMetric(us(median(seq["gated"])-median(seq["direct"])), "seq-extra-µs")
	b.ReportMetric(us(median(perConn["gated"])-median(perConn["direct"])), "conn-extra-µs")
	b.ReportMetric(us(median(seq["relay"])-median(seq["direct"])), "seq-relay-extra-µs")
	b.ReportMetric(us(median(perConn["relay"])-median(perConn["direct"])), "conn-relay-extra-µs")
	if after := auditRecords(b, e, auditLog); after.Records-before.Records < int64(gated) {
		b.Fatalf("%d signatures through the gate added %d records to its audit log", gated, after.Records-before.Records)
	}
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
