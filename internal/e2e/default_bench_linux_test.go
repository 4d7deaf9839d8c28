package e2e

// The headline signing benchmark: postern as it runs with no
// configuration file, against OpenSSH's ssh-agent, both driven by one
// client program in a session of its own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSignDefault signs with Ed25519 through a gateway with no
// configuration file (approval = "session", the default), vault unlocked
// and audit log on, and through OpenSSH's ssh-agent, in rounds that
// alternate between them, and reports the medians (µs per signature):
// one connection signing in turn (seq-*), and a new connection per
// signature (conn-*, what ssh does per login); and the CPU time each
// agent spent per signature of the sequential rounds (seq-*-cpu-µs, all
// its threads), which other load on the machine changes less than the
// wall time.
//
// The signatures come from a client program (this test binary again) in
// a session of its own, as an AI agent's would: its first request to
// postern waits on a card, which the benchmark, outside the client's
// process tree and terminal session, approves for the session with
// "postern approve ID --session"; the grant then covers every later
// request, each checked against live evidence (the peer, the grant's run
// on its ancestry) and recorded durably before its signature leaves. After
// the rounds the audit log must hold one sign record under that grant for
// each signature, so that nothing else is measured.
//
// b.N counts rounds; a round is 40 signatures on one connection and 10 on
// a new connection each, per agent.
func BenchmarkSignDefault(b *testing.B) {
	need(b, "ssh-agent", "ssh-add", "ssh-keygen")
	e := newEnv(b) // no configuration file: the defaults
	key := e.Keygen("ed25519", "ed25519", 0, "")
	sshAgent, sshAgentPID := startSSHAgent(b, e, key)
	gw, auditLog, pass := startVaulted(b, e, key)
	if _, err := os.Stat(e.Path("config", "postern", "config.toml")); !os.IsNotExist(err) {
		b.Fatalf("the gateway under benchmark has a configuration file: %v", err)
	}
	startOutsideConsole(b, e)
	cl := startSignClient(b, e, map[string]string{"default": gw.Socket, "ssh-agent": sshAgent})

	card := e.WaitCard()
	if card.Run.PID != cl.pid {
		b.Fatalf("the card proposes a session for process %d, not the client (%d): %+v", card.Run.PID, cl.pid, card)
	}
	e.MustRun("postern", "approve", card.ID, "--session")
	if line := cl.read(b); line != "ready" {
		b.Fatalf("the client's first signatures: %s\ngateway log:\n%s", line, gw.Log())
	}
	var sessions struct {
		Grants []struct {
			ID  string `json:"id"`
			Run string `json:"run"`
		} `json:"grants"`
	}
	if out := e.MustRun("postern", "sessions", "--json").Stdout; json.Unmarshal([]byte(out), &sessions) != nil || len(sessions.Grants) != 1 {
		b.Fatalf("postern sessions --json, after the approval: want one grant\n%s", out)
	}
	grant := sessions.Grants[0]

	const perRound, connPerRound = 40, 10
	agents := []string{"ssh-agent", "default"}
	pids := map[string]int{"ssh-agent": sshAgentPID, "default": gw.PID()}
	seq := map[string][]time.Duration{}
	seqCPU := map[string]time.Duration{}
	perConn := map[string][]time.Duration{}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for _, a := range agents {
			cpu0 := cpuNanos(b, pids[a])
			seq[a] = append(seq[a], cl.sign(b, "seq", a, perRound)...)
			seqCPU[a] += cpuNanosSince(b, pids[a], cpu0)
			perConn[a] = append(perConn[a], cl.sign(b, "conn", a, connPerRound)...)
		}
	}
	b.StopTimer()

	// One sign record per signature through postern, each under the
	// grant: the client's first, approved, and the rounds'.
	want := 1 + len(seq["default"]) + len(perConn["default"])
	signs, covered := 0, 0
	for line := range strings.Lines(e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass, auditLog).Stdout) {
		var ev struct {
			Type, Run, Grant string
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			b.Fatalf("audit show --json: %v: %s", err, line)
		}
		if ev.Type == "sign" {
			signs++
			if ev.Grant == grant.ID && ev.Run == grant.Run {
				covered++
			}
		}
	}
	if signs != want || covered != want {
		b.Fatalf("the audit log holds %d sign records, %d of them under grant %s of run %s; the client signed %d times", signs, covered, grant.ID, grant.Run, want)
	}

	for _, a := range agents {
		b.ReportMetric(us(median(seq[a])), "seq-"+a+"-µs")
		b.ReportMetric(us(median(perConn[a])), "conn-"+a+"-µs")
		b.ReportMetric(us(seqCPU[a])/float64(len(seq[a])), "seq-"+a+"-cpu-µs")
	}
	ratio := func(x, y []time.Duration) float64 { return float64(median(x)) / float64(median(y)) }
	b.ReportMetric(ratio(seq["ssh-agent"], seq["default"]), "x-seq-default-vs-ssh-agent")
	b.ReportMetric(ratio(perConn["ssh-agent"], perConn["default"]), "x-conn-default-vs-ssh-agent")
}

// signClient is the client program BenchmarkSignDefault drives.
type signClient struct {
	pid int
	in  io.Writer
	out *bufio.Reader
}

// startSignClient starts this test binary as the client (signClientMain)
// in a new session, with the agents' sockets by name, and stops it at the
// end of the benchmark.
func startSignClient(b *testing.B, e *Env, socks map[string]string) *signClient {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(e.Environ(), "POSTERN_E2E_HELPER=signclient")
	for name, sock := range socks {
		cmd.Env = append(cmd.Env, "POSTERN_SIGNCLIENT_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"="+sock)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return &signClient{pid: cmd.Process.Pid, in: in, out: bufio.NewReader(out)}
}

// read returns the client's next line, failing the benchmark when the
// client has not written one within a minute.
func (c *signClient) read(b *testing.B) string {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() { l, err := c.out.ReadString('\n'); got <- answer{strings.TrimSuffix(l, "\n"), err} }()
	select {
	case a := <-got:
		if a.err != nil {
			b.Fatalf("the sign client: %v (read %q)", a.err, a.line)
		}
		return a.line
	case <-time.After(time.Minute):
		b.Fatal("the sign client wrote nothing for a minute")
	}
	return ""
}

// sign has the client make n signatures through the agent named, in the
// mode named (see signClientMain), and returns how long each took.
func (c *signClient) sign(b *testing.B, mode, agentName string, n int) []time.Duration {
	fmt.Fprintf(c.in, "%s %s %d\n", mode, agentName, n)
	line := c.read(b)
	f := strings.Fields(line)
	if len(f) != n {
		b.Fatalf("%s %s: %s", mode, agentName, line)
	}
	ds := make([]time.Duration, n)
	for i, s := range f {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatalf("%s %s: %s", mode, agentName, line)
		}
		ds[i] = time.Duration(ns)
	}
	return ds
}
