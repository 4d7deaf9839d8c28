//go:build soak

package e2e

// The soak test ("make soak", not part of "make test"): a gateway with
// its vault and audit log holds 10,000 idle agent connections while 64
// signers sign without pause, for POSTERN_SOAK_DURATION (10m by
// default). It samples the gateway's resident memory and descriptors,
// and fails if either grows once the connections are up, if a signer
// fails, or if idle connections are dropped while the descriptor limit
// holds them.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

const (
	soakIdle    = 10000
	soakSigners = 64
	// soakFiles is the descriptor limit of the test and of the gateway it
	// starts: each agent connection costs each of them one descriptor.
	soakFiles = 200000
)

func fdCount(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// dialLikeSSH connects to the agent socket as OpenSSH's ssh does: its
// blocking connect(2) waits while the listen backlog is full, where Go's
// non-blocking connect fails at once with EAGAIN. The connection is
// retried after a pause (1 ms, doubling up to 50 ms) for up to two
// minutes; retries counts the attempts that found the backlog full.
func dialLikeSSH(sock string, retries *atomic.Int64) (net.Conn, error) {
	pause := time.Millisecond
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.Dial("unix", sock)
		if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			return c, err
		}
		retries.Add(1)
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func TestSoak(t *testing.T) {
	need(t, "ssh-keygen")
	needRoot(t, "to raise the descriptor limit")
	duration := 10 * time.Minute
	if s := os.Getenv("POSTERN_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		duration = d
	}
	// Raised for the test and the gateway it starts; where raising the
	// hard limit is not allowed (no CAP_SYS_RESOURCE, as in some
	// containers), the hard limit must hold the connections.
	lim := syscall.Rlimit{Cur: soakFiles, Max: soakFiles}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		if lim.Max < soakIdle+soakSigners+1024 {
			t.Fatalf("the descriptor limit is %d and cannot be raised to %d (%v)", lim.Max, soakFiles, err)
		}
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	t.Logf("descriptor limit %d", lim.Cur)

	e := newEnv(t)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "soak pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("soak", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	pubLine := mustRead(t, k+".pub")
	pub, _, _, _, err := ssh.ParseAuthorizedKey(pubLine)
	if err != nil {
		t.Fatal(err)
	}
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	pid := a.PID()
	baseFDs := fdCount(t, pid)
	t.Logf("gateway pid %d: %d KiB resident, %d descriptors before the connections", pid, rss(t, pid), baseFDs)

	// 10,000 idle connections, as many ssh sessions keep.
	idle := make([]net.Conn, 0, soakIdle)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	// Connections wait in the listen backlog (net.core.somaxconn) until
	// the gateway accepts them, and a connect finds it full while the
	// gateway is behind: counted, and retried as ssh's connect waits.
	var idleRetries, signerRetries atomic.Int64
	t0 := time.Now()
	for range soakIdle {
		c, err := dialLikeSSH(a.Socket, &idleRetries)
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	connected := time.Since(t0)
	for fdCount(t, pid) < baseFDs+soakIdle {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d idle connections open in %s (%d connects found the backlog full and waited); the gateway held them all %s later",
		len(idle), connected.Round(time.Millisecond), idleRetries.Load(), (time.Since(t0) - connected).Round(time.Millisecond))

	// 64 signers, each on a connection of its own, signing without pause.
	var (
		signed, failed atomic.Int64
		mu             sync.Mutex
		lat            []time.Duration
		firstErr       error
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range soakSigners {
		wg.Go(func() {
			c, err := dialLikeSSH(a.Socket, &signerRetries)
			if err != nil {
				mu.Lock()
				firstErr = fmt.Errorf("a signer's connect: %w", err)
				mu.Unlock()
				failed.Add(1)
				return
			}
			defer c.Close()
			ag := agent.NewClient(c)
			data := make([]byte, 32)
			var mine []time.Duration
			for {
				select {
				case <-stop:
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
					return
				default:
				}
				rand.Read(data)
				t0 := time.Now()
				if _, err := ag.Sign(pub, data); err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, time.Since(t0))
				signed.Add(1)
			}
		})
	}

	// Let the connections settle, then sample.
	time.Sleep(10 * time.Second)
	type sample struct {
		at       time.Duration
		rss, fds int
		signed   int64
	}
	var samples []sample
	start := time.Now()
	take := func() {
		samples = append(samples, sample{time.Since(start), rss(t, pid), fdCount(t, pid), signed.Load()})
		s := samples[len(samples)-1]
		t.Logf("%6s: %7d KiB resident, %6d descriptors, %8d signatures", s.at.Round(time.Second), s.rss, s.fds, s.signed)
	}
	take()
	for time.Since(start) < duration {
		time.Sleep(min(30*time.Second, duration/10))
		take()
		select {
		case <-a.done:
			t.Fatalf("the gateway exited:\n%s", tail(a.Log(), 3000))
		default:
		}
	}
	close(stop)
	wg.Wait()

	// The idle connections are all still open: a read finds no data and
	// no end of file.
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == nil || !os.IsTimeout(err) {
			closed++
		}
	}
	first, last := samples[0], samples[len(samples)-1]
	maxRSS := first.rss
	for _, s := range samples {
		maxRSS = max(maxRSS, s.rss)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*p))]
	}
	elapsed := last.at - first.at
	rate := float64(last.signed-first.signed) / elapsed.Seconds()
	report := fmt.Sprintf("soak: %s with %d idle connections and %d signers: %d signatures (%.0f/s), %d failed; latency p50 %s p99 %s max %s; "+
		"resident %d KiB after the connections were up, %d KiB at the end, %d KiB at most; descriptors %d then %d; %d idle connections closed; "+
		"connects that found the listen backlog full and waited: %d idle, %d signers",
		elapsed.Round(time.Second), soakIdle, soakSigners, signed.Load(), rate, failed.Load(), pct(0.5), pct(0.99), pct(1), first.rss, last.rss, maxRSS, first.fds, last.fds, closed,
		idleRetries.Load(), signerRetries.Load())
	t.Log(report)
	fmt.Println(report)
	if failed.Load() > 0 {
		t.Errorf("%d signatures failed; first: %v", failed.Load(), firstErr)
	}
	if closed > 0 {
		t.Errorf("%d idle connections were closed", closed)
	}
	if last.fds > first.fds+soakSigners {
		t.Errorf("descriptors grew from %d to %d", first.fds, last.fds)
	}
	if maxRSS > first.rss+64<<10 {
		t.Errorf("resident memory grew from %d KiB to %d KiB", first.rss, maxRSS)
	}
	if out, err := exec.Command(posternBin, "audit", "verify", e.Path("state", "postern", "audit.log")).CombinedOutput(); err != nil {
		t.Errorf("audit verify after the soak: %v\n%s", err, out)
	}
}
