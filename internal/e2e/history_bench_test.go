package e2e

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// historyRecords is the size of the log BenchmarkHistory reads: a million
// events, or ten thousand with -short (CI runs the benchmarks once, to keep
// them working, and times nothing).
func historyRecords() int {
	if testing.Short() {
		return 10000
	}
	return 1000000
}

// BenchmarkHistory reads a large audit log with the real commands: it
// writes historyRecords sign events (1,000 runs, session approvals and
// ends among them) with the gateway's writer, durably, then times
// "postern audit show --json", "postern activity" and "postern sessions
// --history" over all of it, "postern activity --since" over its last
// hundredth and "--run" for one run, each a fresh process (its peak
// resident memory is reported), with no gateway: each opens the vault
// with its passphrase and reads the file. The vault is made as "postern
// vault init" makes it by default, its Argon2id calibrated to take half a
// second on this machine (the memory it chose is reported, kdf-MiB): an
// offline command needs that memory. Then it
// times the start of a gateway over the log (until its socket answers),
// which verifies it from its last checkpoint, unlocks it, and times the
// same commands again without a passphrase, the gateway reading for them
// ("gw-" figures): the command's peak resident memory, and the gateway's
// resident memory at its highest while it read (sampled every 10 ms).
func BenchmarkHistory(b *testing.B) {
	e := newEnv(b)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "bench\n", 0o600)
	e.Unsetenv("POSTERN_KDF_TARGET") // the default calibration
	made := e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	kdf := regexp.MustCompile(`argon2id t=\d+ m=(\d+)MiB`).FindStringSubmatch(made.Stdout + made.Stderr)
	if kdf == nil {
		b.Fatalf("vault init did not say its key derivation's parameters: %s", made)
	}
	kdfMiB, _ := strconv.Atoi(kdf[1])
	state := e.Path("state", "postern")
	setup, err := audit.LoadSetup(state)
	if err != nil {
		b.Fatal(err)
	}
	l, err := audit.Open(setup.Config(filepath.Join(state, "audit.log")))
	if err != nil {
		b.Fatal(err)
	}
	n := historyRecords()
	base := time.Now().Add(-time.Duration(n) * time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				run := "R" + strconv.Itoa(int(i%1000))
				ev := audit.Event{Type: audit.EventSign, Time: base.Add(time.Duration(i) * time.Millisecond), BootID: "B1", VaultEpoch: 2,
					Run: run, Grant: "G" + run, Key: "SHA256:Pq3b0mJk7bXo1vJcQ0m8aEwV3fW6yCq7cOeG0c3xq1Y", Mode: audit.ModeSession,
					Dest: "SHA256:2mJkq8v0cZ3d1oPqYxW7bR5tE9uI0oPaSdFgHjKlZxC", Reason: audit.ReasonSession,
					Detail: map[string]string{"channel": "agent", "purpose": "auth", "pid": strconv.Itoa(int(4000 + i%1000)), "exe": "/usr/bin/ssh"}}
				switch i % 1000 {
				case 0:
					ev.Type, ev.Reason, ev.Approver = audit.EventSessionApproved, "", "tty:/dev/pts/3"
				case 999:
					ev.Type, ev.Reason = audit.EventSessionEnded, audit.ReasonProcessExited
				}
				if err := l.Append(ev); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	type run struct {
		name string
		args []string
	}
	since := base.Add(time.Duration(n*99/100) * time.Millisecond).Format(time.RFC3339Nano)
	runs := []run{
		{"show", []string{"audit", "show", "--json"}},
		{"activity", []string{"activity"}},
		{"sessions", []string{"sessions", "--history"}},
		{"since", []string{"activity", "--since", since}},
		{"run", []string{"activity", "--run", "R7"}},
	}
	// The command runs under GNU time, which reports its peak resident
	// memory. The go command's own children cannot: os/exec starts them
	// sharing this process's memory until they execute (vfork), and
	// Linux counts this process's peak into theirs, so a command read as
	// large as this benchmark had grown.
	need(b, "/usr/bin/time")
	peakFile := e.Path("peak")
	time1 := func(prefix string, r run, args []string) {
		cmd := e.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", peakFile, posternBin}, args...)...)
		cmd.Stdout = io.Discard
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("postern %v: %v", args, err)
		}
		took := time.Since(start)
		rss, err := strconv.Atoi(strings.TrimSpace(string(mustRead(b, peakFile)))) // KiB
		if err != nil {
			b.Fatalf("peak memory of postern %v: %v", args, err)
		}
		b.ReportMetric(took.Seconds(), prefix+r.name+"-s")
		b.ReportMetric(float64(rss)/1024, prefix+r.name+"-MiB")
	}
	for i := 0; i < b.N; i++ {
		for _, r := range runs {
			time1("", r, append(r.args, "--passphrase-file", pass))
		}
		start := time.Now()
		a := e.StartAgent()
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "gateway-start-ms")
		e.MustRun("postern", "unlock", "--passphrase-file", pass)
		for _, r := range runs {
			stop := make(chan struct{})
			peak := make(chan int64)
			go func() { peak <- sampleRSS(a.PID(), stop) }()
			time1("gw-", r, r.args)
			close(stop)
			b.ReportMetric(float64(<-peak)/(1<<20), "gw-"+r.name+"-gateway-MiB")
		}
		a.Stop()
	}
	b.ReportMetric(float64(n), "records")
	b.ReportMetric(float64(kdfMiB), "kdf-MiB")
}

// sampleRSS returns the highest resident memory of process pid, in
// bytes, read from /proc every 10 ms until stop is closed.
func sampleRSS(pid int, stop chan struct{}) int64 {
	var most int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				pages, _ := strconv.ParseInt(f[1], 10, 64)
				most = max(most, pages*int64(os.Getpagesize()))
			}
		}
		select {
		case <-stop:
			return most
		case <-t.C:
		}
	}
}
