package e2e

// The benchmarks behind the goals make bench checks (see
// internal/benchgoals): each compares postern with its anchor in one run,
// in alternation, so that a busy machine slows both alike, and reports
// medians and their ratios as metrics.

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"
)

// signWorld runs three agents holding one Ed25519 key: OpenSSH's
// ssh-agent; postern without a vault (no audit log, the key added with
// ssh-add); and postern in the configuration "postern vault init" gives,
// vault unlocked and audit log on. Both posterns sign with approval =
// "none": the protocol, peer identification, the per-request live
// re-check, the decision and, audited, the durable record are measured,
// not a person.
type signWorld struct {
	env       *Env
	pub       ssh.PublicKey
	priv      ed25519.PrivateKey
	sshAgent  string
	unaudited string
	pids      map[string]int // the agents' processes, by name (ssh-agent, unaudited)
	audited   string
	auditLog  string
}

func newSignWorld(b *testing.B) *signWorld {
	need(b, "ssh-agent", "ssh-add", "ssh-keygen")
	w := &signWorld{}
	plain := newEnv(b)
	plain.Config(`approval = "none"`)
	key := plain.Keygen("ed25519", "ed25519", 0, "")
	raw, err := ssh.ParseRawPrivateKey(mustRead(b, key))
	if err != nil {
		b.Fatal(err)
	}
	w.priv = *raw.(*ed25519.PrivateKey)
	w.pub, _, _, _, err = ssh.ParseAuthorizedKey(mustRead(b, key+".pub"))
	if err != nil {
		b.Fatal(err)
	}
	w.env = plain

	var sshAgentPID int
	w.sshAgent, sshAgentPID = startSSHAgent(b, plain, key)
	unaudited := plain.startQuietAgentAt(plain.Path("run", "postern", "agent.sock"))
	w.unaudited = unaudited.Socket
	w.pids = map[string]int{"ssh-agent": sshAgentPID, "unaudited": unaudited.PID()}
	sshAdd(b, plain, w.unaudited, key)

	vaulted := newEnv(b)
	vaulted.Config(`approval = "none"`)
	var gw *Agent
	gw, w.auditLog, _ = startVaulted(b, vaulted, key)
	w.audited = gw.Socket
	w.pids["audited"] = gw.PID()
	return w
}

// startSSHAgent starts OpenSSH's ssh-agent in e, in the foreground, with
// the private key in the file key added, and returns its socket and pid.
func startSSHAgent(b *testing.B, e *Env, key string) (sock string, pid int) {
	sock = e.Path("run", "ssh-agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.Env = e.Environ()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitSocket(b, sock)
	sshAdd(b, e, sock, key)
	return sock, cmd.Process.Pid
}

// sshAdd adds the private key in the file key to the agent at sock.
func sshAdd(b *testing.B, e *Env, sock, key string) {
	add := exec.Command("ssh-add", key)
	add.Env = append(e.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		b.Fatalf("ssh-add to %s: %v %s", sock, err, out)
	}
}

// startVaulted starts a gateway in e in the configuration "postern vault
// init" gives, the private key in the file key in its vault, unlocked,
// and returns it, its audit log and the vault's passphrase file.
func startVaulted(b *testing.B, e *Env, key string) (gw *Agent, auditLog, pass string) {
	pass = e.WriteFile("pass", "bench\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, key)
	gw = e.startQuietAgentAt(e.Path("run", "postern", "agent.sock"))
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	auditLog = e.Path("state", "postern", "audit.log")
	if !auditRecords(b, e, auditLog).OK {
		b.Fatal("the audit log is not on")
	}
	return gw, auditLog, pass
}

type auditReport struct {
	OK      bool  `json:"ok"`
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

func auditRecords(b testing.TB, e *Env, log string) auditReport {
	var r auditReport
	out := e.MustRun("postern", "audit", "verify", "--json", log).Stdout
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		b.Fatalf("audit verify --json: %v\n%s", err, out)
	}
	return r
}

var signData = []byte("a session identifier and a userauth request, roughly this long, to be signed")

// floor measures what an audited signature cannot go below on this
// machine: an Ed25519 signature of the same data in this process, a round
// trip of a request and a reply of a signature's sizes over a unix socket
// to another goroutine, and one durable write of an audit record's size —
// whichever is cheaper of an append with fdatasync to a growing file and a
// write with fdatasync over a pre-allocated, zero-filled one — on the file
// system of the audit log.
//
// Beside it, for the reader, the same floor with its round trip to
// another process (xproc): what any agent's clients pay, since an agent
// is never in its client's process; on a VM whose idle CPUs sleep, a
// wake-up across processes costs far more than a hand-over between two
// goroutines that the Go runtime keeps spinning. The goal is checked
// against the stricter floor.
type floor struct {
	priv      ed25519.PrivateKey
	conn      net.Conn
	xproc     net.Conn // to an echo in another process
	req, resp []byte
	rec       []byte
	grow      *os.File
	pre       *os.File
	preOff    int64
}

const floorPrealloc = 64 << 20

func newFloor(b *testing.B, priv ed25519.PrivateKey, dir string, recSize int) *floor {
	f := &floor{priv: priv, req: make([]byte, 150), resp: make([]byte, 92), rec: make([]byte, recSize)}
	for i := range f.rec {
		f.rec[i] = byte(i) | 1
	}
	l, err := net.Listen("unix", filepath.Join(dir, "floor.sock"))
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := l.Accept()
		l.Close()
		if err != nil {
			return
		}
		in, out := make([]byte, len(f.req)), make([]byte, len(f.resp))
		for {
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	if f.conn, err = net.Dial("unix", filepath.Join(dir, "floor.sock")); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.conn.Close() })
	xsock := filepath.Join(dir, "floor-xproc.sock")
	echo := exec.Command(os.Args[0])
	echo.Env = append(os.Environ(), "POSTERN_E2E_HELPER=echo", "POSTERN_ECHO_LISTEN="+xsock, fmt.Sprintf("POSTERN_ECHO_SIZES=%d,%d", len(f.req), len(f.resp)))
	echo.Stderr = os.Stderr
	if err := echo.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { echo.Process.Kill(); echo.Wait() })
	waitSocket(b, xsock)
	if f.xproc, err = net.Dial("unix", xsock); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.xproc.Close() })
	if f.grow, err = os.OpenFile(filepath.Join(dir, "floor-append"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		b.Fatal(err)
	}
	if f.pre, err = os.OpenFile(filepath.Join(dir, "floor-prealloc"), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		b.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < floorPrealloc; off += int64(len(zeros)) {
		f.pre.WriteAt(zeros, off)
	}
	f.pre.Sync()
	b.Cleanup(func() { f.grow.Close(); f.pre.Close() })
	return f
}

func timed(fn func()) time.Duration {
	t := time.Now()
	fn()
	return time.Since(t)
}

func (f *floor) sign() time.Duration {
	return timed(func() { ed25519.Sign(f.priv, signData) })
}

func (f *floor) roundTrip(b *testing.B, c net.Conn) time.Duration {
	return timed(func() {
		if _, err := c.Write(f.req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, f.resp); err != nil {
			b.Fatal(err)
		}
	})
}

func (f *floor) appendSync(b *testing.B) time.Duration {
	return timed(func() {
		if _, err := f.grow.Write(f.rec); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.grow.Fd())); err != nil {
			b.Fatal(err)
		}
	})
}

func (f *floor) overwriteSync(b *testing.B) time.Duration {
	if f.preOff+int64(len(f.rec)) > floorPrealloc {
		f.preOff = 0
	}
	d := timed(func() {
		if _, err := f.pre.WriteAt(f.rec, f.preOff); err != nil {
			b.Fatal(err)
		}
		if err := unix.Fdatasync(int(f.pre.Fd())); err != nil {
			b.Fatal(err)
		}
	})
	f.preOff += int64(len(f.rec))
	return d
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkSignGoals signs with Ed25519 through ssh-agent, postern
// unaudited and postern audited (see signWorld), in rounds that alternate
// between them and the floor (see floor), and reports the medians:
//
//   - sequential, one connection signing in turn (µs per signature);
//   - concurrent, 8 clients on their own connections (µs per signature of
//     the total throughput);
//   - a new connection per signature (what ssh does per login), unaudited,
//     and the agent's CPU time per such signature (conn-*-cpu-µs, all its
//     threads, from /proc/PID/task/*/schedstat);
//   - the agent's CPU time per signature of the sequential rounds
//     (seq-*-cpu-µs), which other load changes less than the wall time.
//
// b.N counts rounds; a round is 40 signatures per agent and mode.
func BenchmarkSignGoals(b *testing.B) {
	w := newSignWorld(b)
	type agentConn struct {
		name string
		sock string
		cl   agent.ExtendedAgent
	}
	agents := []*agentConn{{name: "ssh-agent", sock: w.sshAgent}, {name: "unaudited", sock: w.unaudited}, {name: "audited", sock: w.audited}}
	for _, a := range agents {
		var c net.Conn
		a.cl, c = dialAgent(b, a.sock)
		defer c.Close()
		if _, err := a.cl.Sign(w.pub, signData); err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
	}
	// The size of the record a signature adds to the audit log.
	before := auditRecords(b, w.env, w.auditLog)
	for i := 0; i < 20; i++ {
		agents[2].cl.Sign(w.pub, signData)
	}
	after := auditRecords(b, w.env, w.auditLog)
	recSize := int((after.Bytes - before.Bytes) / max(after.Records-before.Records, 1))
	fl := newFloor(b, w.priv, filepath.Dir(w.auditLog), recSize)

	const perRound = 40
	seq := map[string][]time.Duration{}
	conc := map[string][]time.Duration{}
	perConn := map[string][]time.Duration{}
	connCPU := map[string]time.Duration{}
	seqCPU := map[string]time.Duration{}
	var fSign, fRTT, fXRTT, fAppend, fOver []time.Duration
	concClients := map[string][]agent.ExtendedAgent{}
	for _, a := range agents {
		for i := 0; i < 8; i++ {
			cl, c := dialAgent(b, a.sock)
			defer c.Close()
			concClients[a.name] = append(concClients[a.name], cl)
		}
	}
	b.ResetTimer()
	for round := 0; round < b.N; round++ {
		for _, a := range agents {
			cpu0 := cpuNanos(b, w.pids[a.name])
			for i := 0; i < perRound; i++ {
				d := timed(func() {
					if _, err := a.cl.Sign(w.pub, signData); err != nil {
						b.Fatalf("%s: %v", a.name, err)
					}
				})
				seq[a.name] = append(seq[a.name], d)
			}
			seqCPU[a.name] += cpuNanosSince(b, w.pids[a.name], cpu0)
			// 8 concurrent clients, perRound signatures each.
			d := timed(func() {
				var wg sync.WaitGroup
				for _, cl := range concClients[a.name] {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < perRound; i++ {
							if _, err := cl.Sign(w.pub, signData); err != nil {
								b.Errorf("%s: %v", a.name, err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
			conc[a.name] = append(conc[a.name], d/(8*perRound))
			if a.name != "audited" {
				cpu0 := cpuNanos(b, w.pids[a.name])
				for i := 0; i < perRound/4; i++ {
					perConn[a.name] = append(perConn[a.name], timed(func() {
						cl, c := dialAgent(b, a.sock)
						if _, err := cl.Sign(w.pub, signData); err != nil {
							b.Fatalf("%s: %v", a.name, err)
						}
						c.Close()
					}))
				}
				connCPU[a.name] += cpuNanosSince(b, w.pids[a.name], cpu0)
			}
		}
		for i := 0; i < perRound; i++ {
			fSign = append(fSign, fl.sign())
			fRTT = append(fRTT, fl.roundTrip(b, fl.conn))
			fXRTT = append(fXRTT, fl.roundTrip(b, fl.xproc))
			fAppend = append(fAppend, fl.appendSync(b))
			fOver = append(fOver, fl.overwriteSync(b))
		}
	}
	b.StopTimer()
	durable := min(median(fAppend), median(fOver))
	fl0 := median(fSign) + median(fRTT) + durable
	b.ReportMetric(us(median(fSign)), "floor-sign-µs")
	b.ReportMetric(us(median(fRTT)), "floor-rtt-µs")
	b.ReportMetric(us(median(fAppend)), "floor-append-fdatasync-µs")
	b.ReportMetric(us(median(fOver)), "floor-overwrite-fdatasync-µs")
	b.ReportMetric(us(fl0), "floor-µs")
	xfl := median(fSign) + median(fXRTT) + durable
	b.ReportMetric(us(median(fXRTT)), "floor-xproc-rtt-µs")
	b.ReportMetric(us(xfl), "floor-xproc-µs")
	b.ReportMetric(float64(recSize), "audit-record-bytes")
	for _, a := range agents {
		b.ReportMetric(us(median(seq[a.name])), "seq-"+a.name+"-µs")
		b.ReportMetric(us(median(conc[a.name])), "conc8-"+a.name+"-µs")
		b.ReportMetric(us(seqCPU[a.name])/float64(len(seq[a.name])), "seq-"+a.name+"-cpu-µs")
		if a.name != "audited" {
			b.ReportMetric(us(median(perConn[a.name])), "conn-"+a.name+"-µs")
			b.ReportMetric(us(connCPU[a.name])/float64(len(perConn[a.name])), "conn-"+a.name+"-cpu-µs")
		}
	}
	ratio := func(x, y []time.Duration) float64 { return float64(median(x)) / float64(median(y)) }
	b.ReportMetric(ratio(seq["ssh-agent"], seq["audited"]), "x-seq-audited-vs-ssh-agent")
	b.ReportMetric(float64(median(seq["audited"]))/float64(fl0), "x-seq-audited-over-floor")
	b.ReportMetric(float64(median(seq["audited"]))/float64(xfl), "x-seq-audited-over-xproc-floor")
	b.ReportMetric(ratio(conc["ssh-agent"], conc["audited"]), "x-conc8-audited-vs-ssh-agent")
	b.ReportMetric(ratio(seq["ssh-agent"], seq["unaudited"]), "x-seq-unaudited-vs-ssh-agent")
	b.ReportMetric(ratio(conc["ssh-agent"], conc["unaudited"]), "x-conc8-unaudited-vs-ssh-agent")
	b.ReportMetric(ratio(perConn["ssh-agent"], perConn["unaudited"]), "x-conn-unaudited-vs-ssh-agent")
}

// BenchmarkIdleConnections opens 1,000 connections to ssh-agent and to
// postern (unaudited) that each make one request and then stay open and
// idle, and reports how much each agent's resident memory grew a second
// after the last one, from a second after ten connections that each made
// one request and closed (what serving a first request brings into
// memory once is not the connections' cost).
func BenchmarkIdleConnections(b *testing.B) {
	agents := startBenchAgents(b)
	grow := map[string]float64{}
	for i := 0; i < b.N; i++ {
		for _, a := range agents {
			if i == 0 {
				// A few connections first, closed again: the agent's
				// code for accepting, identifying and listing is then
				// in memory (its pages count in the resident size once
				// touched), and what is measured is the connections.
				for range 10 {
					cl, c := dialAgent(b, a.sock)
					if _, err := cl.List(); err != nil {
						b.Fatalf("%s: %v", a.name, err)
					}
					c.Close()
				}
				time.Sleep(time.Second)
			}
			before := rss(b, a.pid)
			var conns []net.Conn
			for range 1000 {
				cl, c := dialAgent(b, a.sock)
				if _, err := cl.List(); err != nil {
					b.Fatalf("%s: %v", a.name, err)
				}
				conns = append(conns, c)
			}
			// Idle for a second: long enough to have given up what a
			// request needs (a connection keeps a bare descriptor after
			// 100 ms, the gateway trims its memory 100 ms after its
			// last allocation), even when the machine is busy.
			time.Sleep(time.Second)
			// The first round counts: later ones reuse what it freed.
			grow[a.name] = max(grow[a.name], float64(rss(b, a.pid)-before)/1024)
			for _, c := range conns {
				c.Close()
			}
		}
	}
	b.ReportMetric(grow["postern"], "extra-MiB")
	b.ReportMetric(grow["ssh-agent"], "ssh-agent-extra-MiB")
}
