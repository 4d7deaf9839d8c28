package heldsig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/startagain"
)

// childVar makes the test binary a program that holds SIGUSR1 and prints
// what it holds and what it starts gets; personVar a program that starts
// it with SIGUSR1 blocked, as a person may; startAgainVar makes the
// child's Hold start the program again for a setting of its own, as
// hugepages.TurnOff may.
const (
	childVar      = "HELDSIG_TEST_CHILD"
	personVar     = "HELDSIG_TEST_PERSON"
	startAgainVar = "HELDSIG_TEST_START_AGAIN"
)

func TestMain(m *testing.M) {
	Init()
	switch {
	case os.Getenv(personVar) != "":
		os.Unsetenv(personVar)
		runtime.LockOSThread()
		set := setOf([]syscall.Signal{syscall.SIGUSR1})
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		// The program the person starts: an exec from this thread
		// keeps its mask, where the runtime would give a child its own.
		syscall.Exec(os.Args[0], os.Args, append(os.Environ(), childVar+"=1"))
		os.Exit(1)
	case os.Getenv(childVar) != "":
		fmt.Printf("start pid=%d blocked=%v\n", os.Getpid(), blocked(syscall.SIGUSR1))
		// Each start asks for a start again; Hold makes one.
		Hold(os.Getenv(startAgainVar) != "", []string{"HELDSIG_TEST_AGAIN=1"}, syscall.SIGUSR1)
		_, again := os.LookupEnv("HELDSIG_TEST_AGAIN")
		os.Unsetenv(childVar)
		// Not through a shell, which may set its own mask.
		out, err := released("grep", "SigBlk", "/proc/self/status")
		fmt.Printf("held pid=%d held=%v again=%v names=%v childenv=%q child=%q err=%v\n", os.Getpid(), Held(syscall.SIGUSR1), again, uniq(startagain.Names()), ChildEnv(), strings.TrimSpace(string(out)), err)
		os.Exit(0)
	}
	Hold(false, nil, syscall.SIGUSR1)
	os.Exit(m.Run())
}

// released runs a program as the gateway starts one.
func released(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	Release(cmd)
	return cmd.Output()
}

func uniq(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }

// blocked reports whether s is blocked in the calling thread.
func blocked(s syscall.Signal) bool {
	m, err := threadMask()
	return err == nil && inSet(&m, s)
}

// threadsBlocking reads, from /proc, how many threads of the process
// there are and how many block s.
func threadsBlocking(t *testing.T, s syscall.Signal) (n, blocking int) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	bit := uint64(1) << (uint(s) - 1)
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "SigBlk:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				n++
				if mask&bit != 0 {
					blocking++
				}
			}
		}
	}
	return n, blocking
}

// Every thread of the held process blocks SIGUSR1, those the runtime
// starts later too.
func TestEveryThreadBlocks(t *testing.T) {
	if !Held(syscall.SIGUSR1) {
		t.Fatal("Hold did not hold SIGUSR1 in the test process")
	}
	// Threads kept busy force the runtime to start more.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-stop
		}()
	}
	time.Sleep(50 * time.Millisecond)
	n, blocking := threadsBlocking(t, syscall.SIGUSR1)
	close(stop)
	wg.Wait()
	if n < 9 || blocking != n {
		t.Fatalf("%d of %d threads block SIGUSR1", blocking, n)
	}
}

// recorder is a queue's act: it records each signal, and holds each act
// until let go when gate is set.
type recorder struct {
	mu   sync.Mutex
	got  []os.Signal
	in   chan struct{}
	gate chan struct{}
}

func (r *recorder) act(s os.Signal) {
	if r.gate != nil {
		r.in <- struct{}{}
		<-r.gate
	}
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// A held signal sent before Take is acted on by Take, with nothing else
// running; and one only, however often it was sent, as the kernel keeps
// one pending.
func TestTakeActsOnTheSignalSentBefore(t *testing.T) {
	r := &recorder{}
	q := NewQueue(r.act, syscall.SIGUSR1)
	for range 1000 {
		syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		before := r.count()
		q.Take()
		if r.count() != before+1 {
			t.Fatalf("Take acted on %d signals, want 1", r.count()-before)
		}
	}
	q.Take()
	if r.count() != 1000 {
		t.Fatalf("a Take with nothing pending acted: %d acts", r.count())
	}
}

// Run acts on a held signal as it arrives; a Take meanwhile waits until
// the act is done, so that a request never runs beside a wipe.
func TestRunActsAndTakeWaits(t *testing.T) {
	r := &recorder{in: make(chan struct{}), gate: make(chan struct{})}
	q := NewQueue(r.act, syscall.SIGUSR1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case <-r.in:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not act on the signal")
	}
	took := make(chan struct{})
	go func() { q.Take(); close(took) }()
	select {
	case <-took:
		t.Fatal("Take returned while the signal was being acted on")
	case <-time.After(50 * time.Millisecond):
	}
	close(r.gate)
	<-took
	if r.count() != 1 {
		t.Fatalf("%d acts, want 1", r.count())
	}
}

// A signal not held is caught (Catch) and acted on by Run, or by Take
// once os/signal passed it on.
func TestCaughtSignal(t *testing.T) {
	r := &recorder{}
	q := NewQueue(r.act, syscall.SIGUSR2)
	stop := q.Catch()
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGUSR2)
	deadline := time.Now().Add(10 * time.Second)
	for r.count() == 0 && time.Now().Before(deadline) {
		q.Take()
		time.Sleep(time.Millisecond)
	}
	if r.count() != 1 || r.got[0] != syscall.SIGUSR2 {
		t.Fatalf("acts: %v", r.got)
	}
}

// TestHoldStartsTheProgramAgain runs Hold in a child: where SIGUSR1 is
// not blocked, the program starts a second time, in the same process,
// with it blocked, the environment Hold was given, and its name; what
// it starts through Release has it unblocked again, and ChildEnv hands
// the daemon the signal to release. Where the person started the program
// with SIGUSR1 blocked, it starts once, holds it, and what it starts
// keeps it blocked, as the person set. Where the caller asks for a start
// again too, there is one start again either way, never two.
func TestHoldStartsTheProgramAgain(t *testing.T) {
	name := startagain.Names()[0]
	// The mask the test was started with, which Release gives back.
	mask, err := threadMask()
	if err != nil {
		t.Fatal(err)
	}
	usr1 := uint64(1) << (syscall.SIGUSR1 - 1)
	base := uint64(mask.Val[0]) &^ usr1
	for _, c := range []struct{ person, startAgain bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("blocked-by-person=%v,start-again=%v", c.person, c.startAgain), func(t *testing.T) {
			// From a process whose mask has SIGUSR1 unblocked, as
			// Release gives it.
			v := childVar
			if c.person {
				v = personVar
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), v+"=1")
			if c.startAgain {
				cmd.Env = append(cmd.Env, startAgainVar+"=1")
			}
			Release(cmd)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			pid := cmd.Process.Pid
			want := []string{fmt.Sprintf("start pid=%d blocked=%v", pid, c.person)}
			childMask, childEnv, again := maskLine(base), `[]`, false
			if c.person {
				childMask = maskLine(base | usr1)
			} else {
				childEnv = `["POSTERN_HELD_SIGNALS=10"]`
			}
			if !c.person || c.startAgain {
				want = append(want, fmt.Sprintf("start pid=%d blocked=true", pid))
				again = true
			}
			want = append(want, fmt.Sprintf("held pid=%d held=true again=%v names=[%s] childenv=%s child=%q err=<nil>", pid, again, name, childEnv, childMask))
			if got := strings.TrimSpace(string(out)); got != strings.Join(want, "\n") {
				t.Errorf("the child printed\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// A program Release starts that cannot be executed fails with status 127
// and says why on its standard error, where exec.Cmd's Start would have.
func TestReleaseExecFails(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/not-executable"
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	cmd.Path = path // past exec.Command's own check
	cmd.Err = nil
	Release(cmd)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 127 || !strings.Contains(stderr.String(), "permission denied") {
		t.Fatalf("err %v, stderr %q", err, stderr.String())
	}
}

// maskLine is the line of /proc/PID/status that shows mask blocked.
func maskLine(mask uint64) string { return fmt.Sprintf("SigBlk:\t%016x", mask) }

// BenchmarkTake measures what each agent request pays before it is
// acted on, with SIGUSR1 held and nothing pending: one rt_sigtimedwait
// under the queue's lock. /caught is a queue whose signal is caught
// through os/signal instead, which takes no lock.
func BenchmarkTake(b *testing.B) {
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"held", syscall.SIGUSR1}, {"caught", syscall.SIGUSR2}} {
		b.Run(c.name, func(b *testing.B) {
			q := NewQueue(func(os.Signal) { b.Fatal("acted on a signal never sent") }, c.sig)
			for b.Loop() {
				q.Take()
			}
		})
	}
}

// The lists of signals the environment hands on are read from a variable
// anything of the user's can set: parse gives only signal numbers, and
// writing what it read and reading it again gives the same.
func FuzzParse(f *testing.F) {
	f.Add("10")
	f.Add("1,10")
	f.Add(",,-1,65,0x0a, 10")
	f.Fuzz(func(t *testing.T, v string) {
		sigs := parse(v)
		for _, s := range sigs {
			if s < 1 || s > 64 {
				t.Fatalf("parse(%q) gave signal %d", v, s)
			}
		}
		if again := parse(format(sigs)); !slices.Equal(again, sigs) {
			t.Fatalf("parse(format(%v)) = %v", sigs, again)
		}
	})
}
