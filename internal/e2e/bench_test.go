package e2e

// Side-by-side benchmarks: the same signatures through OpenSSH's
// ssh-agent and through postern, in one run, on the same keys.
//
//	go test -run '^$' -bench Sign -benchtime 2s ./internal/e2e/
//
// Here postern runs with approval = "none", so what is measured is the
// protocol, the per-connection peer identification and the per-request
// identity re-check, not a person; BenchmarkSignDefault measures the
// default configuration whole (approval = "session", a grant covering
// the requests).

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/bastion"
)

// benchAgent is an agent under benchmark with its keys loaded.
type benchAgent struct {
	env  *Env
	name string
	sock string
	pid  int
	keys map[string]ssh.PublicKey
	gw   *Agent // postern's; nil for ssh-agent
}

func startBenchAgents(b *testing.B) []*benchAgent {
	need(b, "ssh-agent", "ssh-add", "ssh-keygen")
	e := newEnv(b)
	e.Config(`approval = "none"`)
	keyFiles := map[string]string{
		"ed25519": e.Keygen("ed25519", "ed25519", 0, ""),
		"rsa3072": e.Keygen("rsa3072", "rsa", 3072, ""),
	}
	var agents []*benchAgent

	// OpenSSH's ssh-agent, in the foreground.
	sock := e.Path("run", "ssh-agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.Env = e.Environ()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitSocket(b, sock)
	agents = append(agents, &benchAgent{env: e, name: "ssh-agent", sock: sock, pid: cmd.Process.Pid})

	p := e.StartAgent()
	agents = append(agents, &benchAgent{env: e, name: "postern", sock: p.Socket, pid: p.PID(), gw: p})

	for _, a := range agents {
		a.keys = map[string]ssh.PublicKey{}
		for name, f := range keyFiles {
			add := exec.Command("ssh-add", f)
			add.Env = append(e.Environ(), "SSH_AUTH_SOCK="+a.sock)
			if out, err := add.CombinedOutput(); err != nil {
				b.Fatalf("ssh-add to %s: %v %s", a.name, err, out)
			}
			pub, _, _, _, err := ssh.ParseAuthorizedKey(mustRead(b, f+".pub"))
			if err != nil {
				b.Fatal(err)
			}
			a.keys[name] = pub
		}
	}
	return agents
}

func waitSocket(b testing.TB, sock string) {
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("no agent at %s", sock)
}

func signFlags(key string) agent.SignatureFlags {
	if strings.HasPrefix(key, "rsa") {
		return agent.SignatureFlagRsaSha256
	}
	return 0
}

func dialAgent(b *testing.B, sock string) (agent.ExtendedAgent, net.Conn) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	return agent.NewClient(c), c
}

// BenchmarkSign measures sign round trips through the socket: one
// connection signing in sequence; 8 concurrent clients, each on its own
// connection; and a new connection for every signature (what ssh does
// for each login).
func BenchmarkSign(b *testing.B) {
	agents := startBenchAgents(b)
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	for _, key := range []string{"ed25519", "rsa3072"} {
		for _, mode := range []string{"sequential", "concurrent8", "conn-per-sign"} {
			for _, a := range agents {
				pub, flags := a.keys[key], signFlags(key)
				b.Run(fmt.Sprintf("key=%s/mode=%s/agent=%s", key, mode, a.name), func(b *testing.B) {
					switch mode {
					case "sequential":
						cl, c := dialAgent(b, a.sock)
						defer c.Close()
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if _, err := cl.SignWithFlags(pub, data, flags); err != nil {
								b.Fatal(err)
							}
						}
					case "concurrent8":
						clients := make([]agent.ExtendedAgent, 8)
						for i := range clients {
							cl, c := dialAgent(b, a.sock)
							defer c.Close()
							clients[i] = cl
						}
						b.ResetTimer()
						var wg sync.WaitGroup
						for w := 0; w < 8; w++ {
							wg.Add(1)
							go func(cl agent.ExtendedAgent, n int) {
								defer wg.Done()
								for i := 0; i < n; i++ {
									if _, err := cl.SignWithFlags(pub, data, flags); err != nil {
										b.Error(err)
										return
									}
								}
							}(clients[w], (b.N+7-w)/8)
						}
						wg.Wait()
					case "conn-per-sign":
						for i := 0; i < b.N; i++ {
							cl, c := dialAgent(b, a.sock)
							if _, err := cl.SignWithFlags(pub, data, flags); err != nil {
								b.Fatal(err)
							}
							c.Close()
						}
					}
				})
			}
		}
	}
}

// BenchmarkSignCoveredByGrant compares an Ed25519 signature that a live
// session grant covers (postern with the default approval = "session",
// so every request runs the full live check of the grant) with OpenSSH
// ssh-agent's plain signature.
func BenchmarkSignCoveredByGrant(b *testing.B) {
	agents := startBenchAgents(b)
	sshAgent, postern := agents[0], agents[1]
	postern.gw.Reconfigure(b, `approval = "session"`)
	pub := postern.keys["ed25519"]
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	cl, c := dialAgent(b, postern.sock)
	defer c.Close()
	// The first signature asks; an approver in another session grants this
	// process a session.
	startOutsideConsole(b, postern.env)
	signed := make(chan error, 1)
	go func() { _, err := cl.Sign(pub, data); signed <- err }()
	var card []cardJSON
	for deadline := time.Now().Add(time.Minute); len(card) == 0; {
		select {
		case err := <-signed:
			b.Fatalf("the first signature was decided without a card: %v\n%s", err, postern.gw.Log())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("no card for the first signature")
		}
		card = postern.env.cards()
		time.Sleep(10 * time.Millisecond)
	}
	approve := postern.env.Command("setsid", "-f", "sh", "-c", reparented+`exec "$@"`, "-", posternBin, "approve", card[0].ID, "--session")
	out, err := approve.CombinedOutput()
	if err != nil || strings.Contains(string(out), "error") {
		b.Fatalf("approve: %v %s", err, out)
	}
	if err := <-signed; err != nil {
		b.Fatalf("the approved signature: %v\napprove printed: %s\ngateway log:\n%s", err, out, postern.gw.Log())
	}
	for _, a := range []*benchAgent{sshAgent, postern} {
		name := a.name
		if a == postern {
			name = "postern-session-grant"
		}
		b.Run("key=ed25519/mode=sequential/agent="+name, func(b *testing.B) {
			cl, c := dialAgent(b, a.sock)
			defer c.Close()
			for i := 0; i < b.N; i++ {
				if _, err := cl.Sign(pub, data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("key=ed25519/mode=conn-per-sign/agent="+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cl, c := dialAgent(b, a.sock)
				if _, err := cl.Sign(pub, data); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkLogin times a whole ssh login (process start, key exchange,
// authentication through the agent, a command, exit) to the loopback sshd
// through OpenSSH ssh-agent and through postern with its vault and audit
// log on (approval = "none": the person is not measured), side by side.
func BenchmarkLogin(b *testing.B) {
	need(b, "ssh", "sshd", "ssh-agent", "ssh-add")
	e := newEnv(b)
	e.Config(`approval = "none"`)
	key := e.Keygen("login", "ed25519", 0, "")
	pass := e.WriteFile("pass", "bench\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, key)
	sshd := startSSHD(b, pubKey(b, key)+"\n")

	sock := e.Path("run", "ssh-agent.sock")
	sa := exec.Command("ssh-agent", "-D", "-a", sock)
	sa.Env = e.Environ()
	if err := sa.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sa.Process.Kill(); sa.Wait() })
	waitSocket(b, sock)
	add := exec.Command("ssh-add", key)
	add.Env = append(e.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	p := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "audit     /") {
		b.Fatalf("the audit log is not on:\n%s", st)
	}
	args := sshd.SSHArgs(sshd.Target(), "true")
	for _, a := range []struct{ name, sock string }{{"ssh-agent", sock}, {"postern-audited", p.Socket}} {
		b.Run("agent="+a.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cmd := exec.Command("ssh", args...)
				cmd.Env = append(e.Environ(), "SSH_AUTH_SOCK="+a.sock)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
		})
	}
}

// BenchmarkBastion compares commands through the bastion with the same
// commands sent directly (the same key, through the agent), in
// alternation, so that a busy machine slows both alike: "ssh host true"
// (per-command overhead; the medians and their difference are reported)
// and a bulk "cat" of 256 MiB (throughput, and the bastion's fraction of
// the direct path's). b.N counts rounds of five commands and one transfer
// each way. The host is OpenSSH 10's sshd, and both paths start from
// OpenSSH 10's ssh, as people with a current OpenSSH run them: each path
// negotiates mlkem768x25519-sha256 (the key exchanges are reported, and
// the timings compare the same exchange). The key exchange against the
// system's sshd (OpenSSH 9.2, whose post-quantum exchange the bastion
// cannot speak) is reported too.
func BenchmarkBastion(b *testing.B) {
	w := newBastionWorldOn(b, openSSH10(b), "", "")
	big := filepath.Join(w.sshd.Dir, "big")
	f, err := os.Create(big)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(256 << 20); err != nil {
		b.Fatal(err)
	}
	f.Close()
	if r := w.ssh("true"); r.Code != 0 {
		b.Fatalf("through the bastion: %s", r)
	}
	bastionKex, directKex := w.kexes(b)
	b.Logf("key exchange with OpenSSH 10: direct %s, bastion %s", directKex, bastionKex)
	// When the bastion cannot speak the direct path's exchange, the
	// direct path is given the bastion's, so that the timings compare
	// the same exchange.
	var directKexArgs []string
	if directKex != bastionKex {
		directKexArgs = []string{"-o", "KexAlgorithms=" + bastionKex}
	}
	ssh := w.sshd.OpenSSH.SSH
	paths := []struct {
		name string
		cmd  func(...string) *exec.Cmd
	}{
		{"direct", func(args ...string) *exec.Cmd {
			return w.e.Command(ssh, w.sshd.SSHArgs(append(append(slices.Clone(directKexArgs), w.sshd.Target()), args...)...)...)
		}},
		{"bastion", func(args ...string) *exec.Cmd { return w.e.Command(ssh, w.sshArgs(w.sshd.Port, args...)...) }},
	}
	// The system's OpenSSH, for the key exchanges alone.
	w9 := newBastionWorld(b, "")
	if r := w9.ssh("true"); r.Code != 0 {
		b.Fatalf("through the bastion to the system's sshd: %s", r)
	}
	bastionKex9, directKex9 := w9.kexes(b)
	b.Logf("key exchange with the system's OpenSSH: direct %s, bastion %s", directKex9, bastionKex9)
	w9.agent.Stop()
	w9.sshd.Stop()

	times := map[string][]time.Duration{}
	bulk := map[string]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range paths {
			for range 5 {
				start := time.Now()
				if out, err := p.cmd("true").CombinedOutput(); err != nil {
					b.Fatalf("%s: %v %s", p.name, err, out)
				}
				times[p.name] = append(times[p.name], time.Since(start))
			}
			c := p.cmd("cat", big)
			c.Stdout = io.Discard
			start := time.Now()
			if err := c.Run(); err != nil {
				b.Fatal(err)
			}
			bulk[p.name] += time.Since(start)
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	mbps := func(d time.Duration) float64 { return float64(b.N) * 256 * (1 << 20) / 1e6 / d.Seconds() }
	b.ReportMetric(ms(median(times["direct"])), "true-direct-ms")
	b.ReportMetric(ms(median(times["bastion"])), "true-bastion-ms")
	b.ReportMetric(ms(median(times["bastion"])-median(times["direct"])), "extra-ms")
	b.ReportMetric(mbps(bulk["direct"]), "bulk-direct-MB/s")
	b.ReportMetric(mbps(bulk["bastion"]), "bulk-bastion-MB/s")
	b.ReportMetric(mbps(bulk["bastion"])/mbps(bulk["direct"]), "bulk-fraction")
	pq := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	b.ReportMetric(pq(bastion.IsPQKex(directKex)), "kex-pq-direct")
	b.ReportMetric(pq(bastion.IsPQKex(bastionKex)), "kex-pq-bastion")
	b.ReportMetric(pq(bastion.IsPQKex(bastionKex) || !bastion.IsPQKex(directKex)), "kex-not-weaker")
	b.ReportMetric(pq(bastion.IsPQKex(directKex9)), "kex-pq-direct-system")
	b.ReportMetric(pq(bastion.IsPQKex(bastionKex9)), "kex-pq-bastion-system")
	b.ReportMetric(pq(bastion.IsPQKex(bastionKex9) || !bastion.IsPQKex(directKex9)), "kex-not-weaker-system")
}

// lastMatch returns the first group of pattern's last match in s, or "".
func lastMatch(s, pattern string) string {
	m := regexp.MustCompile(pattern).FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// median returns the middle of d (zero when d is empty).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// startOutsideConsole starts a line-mode console that is no descendant of
// this process: the benchmark signs from this process itself, and a
// console inside the requester's tree cannot approve. Its output goes to
// a file.
func startOutsideConsole(b *testing.B, e *Env) {
	b.Helper()
	out, err := os.Create(e.Path("console.out"))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	startOutsideConsoleWith(b, e, out, "approve")
}

// startOutsideConsoleTo starts "postern ARGS" as startOutsideConsole
// does, and returns the reading end of its output and the writing end of
// its input.
func startOutsideConsoleTo(b *testing.B, e *Env, args ...string) (out, in *os.File) {
	b.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer pw.Close()
	b.Cleanup(func() { pr.Close() })
	return pr, startOutsideConsoleWith(b, e, pw, args...)
}

// reparented begins a shell script that setsid -f starts: it waits until
// the shell's parent, the setsid that forked it, has exited, so that what
// it then runs is no longer a descendant of the test (the requester), as
// an approver must not be. setsid -f does not wait for its child, which
// can otherwise reach the gateway first.
const reparented = `while [ "$(cat /proc/$(cut -d' ' -f4 /proc/$$/stat)/comm 2>/dev/null)" = setsid ]; do sleep 0.01; done; `

// startOutsideConsoleWith starts "postern ARGS" writing to out, in a
// session of its own (setsid -f leaves it to init; its pid comes back
// through a file, to stop it), waits until the gateway counts it as a
// console, and returns the writing end of its input.
func startOutsideConsoleWith(b *testing.B, e *Env, out *os.File, args ...string) *os.File {
	b.Helper()
	pidFile := e.Path("console.pid")
	os.Remove(pidFile)
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd := e.Command("setsid", append([]string{"-f", "sh", "-c", reparented + `echo $$ > "$0"; shift; exec "$@"`, pidFile, "-", posternBin}, args...)...)
	// Its output goes to a file or to a pipe given as a file: a pipe of
	// Go's own would keep Run waiting as long as the console runs.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, out, out
	if err := cmd.Run(); err != nil {
		b.Fatalf("starting the console: %v", err)
	}
	pr.Close()
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the console never started")
		}
		text, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(text)))
	}
	console, err := os.FindProcess(pid) // a pidfd, which no other process can take
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		pw.Close()
		console.Kill()
	})
	for deadline := time.Now().Add(20 * time.Second); !e.consoleAttached(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the console never attached")
		}
	}
	return pw
}
