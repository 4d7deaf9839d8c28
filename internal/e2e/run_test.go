package e2e

// A run for the approval tests: "postern run -- <this test binary>" in
// driver mode, which executes shell commands the test sends it, each in
// the background, as descendants of the run. That is how an AI agent
// spawns ssh and git.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Driver is a run started with postern run.
type Driver struct {
	e    *Env
	t    testing.TB
	dir  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	next int
	done chan struct{}
	exit int
	host int // the run's pid as the gateway (and this test) sees it
}

// StartRun launches a driver under "postern run", confined.
func (e *Env) StartRun(label string) *Driver {
	e.t.Helper()
	return e.StartRunWith(label)
}

// StartRunWith launches a driver under "postern run" with extra options
// (such as --no-sandbox).
func (e *Env) StartRunWith(label string, opts ...string) *Driver {
	e.t.Helper()
	dir, err := os.MkdirTemp(e.Dir, "run-")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "cmd"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	self, _ := os.Executable()
	args := append([]string{"run"}, opts...)
	if label != "" {
		args = append(args, "--label", label)
	}
	args = append(args, "--", self, "-driver")
	d := &Driver{e: e, t: e.t, dir: dir, done: make(chan struct{})}
	d.cmd = e.Command("postern", args...)
	d.cmd.Env = append(d.cmd.Env, "POSTERN_E2E_HELPER=driver", "POSTERN_E2E_DIR="+dir)
	logf, _ := os.Create(filepath.Join(dir, "driver.log"))
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// An agent runs in its own terminal session; the person approves from
	// another one (the test's).
	d.cmd.SysProcAttr.Setsid = true
	if err := d.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		d.exit = d.cmd.ProcessState.ExitCode()
		logf.Close()
		close(d.done)
	}()
	e.t.Cleanup(d.Stop)
	e.drivers = append(e.drivers, d)
	// The driver reports its pid once it runs.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
			d.host = d.hostPID()
			return d
		}
		select {
		case <-d.done:
			b, _ := os.ReadFile(filepath.Join(dir, "driver.log"))
			e.t.Fatalf("postern run exited with %d:\n%s", d.exit, b)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "driver.log"))
	e.t.Fatalf("postern run did not start its driver in 20 s:\n%s", b)
	return nil
}

// PID returns the run's process (the driver, after postern run's exec)
// as the gateway sees it.
func (d *Driver) PID() int { return d.host }

// SelfPID returns the pid the driver reports for itself (inside a
// confined run, a pid of the run's own pid namespace).
func (d *Driver) SelfPID() int {
	pid, _ := d.ready()
	return pid
}

// ready reads what the driver reported: its own pid and its run's id.
func (d *Driver) ready() (int, string) {
	b, _ := os.ReadFile(filepath.Join(d.dir, "ready"))
	pid, run, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, _ := strconv.Atoi(pid)
	return n, run
}

// hostPID finds the run's pid in "postern sessions", once the gateway
// registered it.
func (d *Driver) hostPID() int {
	_, id := d.ready()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var sess struct {
			Runs []struct {
				ID  string `json:"id"`
				PID int    `json:"pid"`
			} `json:"runs"`
		}
		r := d.e.Run("postern", "sessions", "--json")
		json.Unmarshal([]byte(r.Stdout), &sess)
		for _, run := range sess.Runs {
			if run.ID == id && run.PID > 0 {
				return run.PID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.t.Fatalf("run %s never registered", id)
	return 0
}

// Job is a command running in the driver.
type Job struct {
	d *Driver
	n int
}

// Start sends a shell command to the driver.
func (d *Driver) Start(command string) *Job {
	d.mu.Lock()
	d.next++
	n := d.next
	d.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(d.dir, "cmd"), os.O_WRONLY, 0)
	if err != nil {
		d.t.Fatal(err)
	}
	fmt.Fprintf(f, "%d\t%s\n", n, command)
	f.Close()
	return &Job{d: d, n: n}
}

// Exec has the driver execute the program at path (a copy of the test
// binary) on its own pid, and waits until that program, a driver again,
// has said it runs. Only then may the next command be sent: the kernel
// shows the new executable before it closes the old program's end of
// the command FIFO, and a command written in between would go to a
// reader about to close it, and be lost with the FIFO's buffer.
func (d *Driver) Exec(path string) {
	d.t.Helper()
	ready := filepath.Join(d.dir, "ready")
	if err := os.Remove(ready); err != nil {
		d.t.Fatal(err)
	}
	d.Start("exec " + path)
	waitFor(d.t, func() bool { _, err := os.Stat(ready); return err == nil })
}

// Do runs a command in the driver and waits for it.
func (d *Driver) Do(command string) Result { return d.Start(command).Wait() }

// Done reports whether the job finished.
func (j *Job) Done() bool {
	_, err := os.Stat(filepath.Join(j.d.dir, fmt.Sprintf("%d.rc", j.n)))
	return err == nil
}

// Wait waits for the job and returns its result.
func (j *Job) Wait() Result {
	j.d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !j.Done() {
		if time.Now().After(deadline) {
			j.d.t.Fatalf("job %d did not finish", j.n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rc, _ := os.ReadFile(filepath.Join(j.d.dir, fmt.Sprintf("%d.rc", j.n)))
	out, _ := os.ReadFile(filepath.Join(j.d.dir, fmt.Sprintf("%d.out", j.n)))
	code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
	return Result{Stdout: string(out), Code: code}
}

// Stop kills the run and waits for postern run to report it.
func (d *Driver) Stop() {
	select {
	case <-d.done:
		return
	default:
	}
	if pid := d.PID(); pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// driverMain is the run's process: it executes commands from the FIFO,
// each in the background, as its own descendants.
func driverMain() {
	dir := os.Getenv("POSTERN_E2E_DIR")
	os.WriteFile(filepath.Join(dir, "ready.tmp"), []byte(strconv.Itoa(os.Getpid())+" "+os.Getenv("POSTERN_RUN")), 0o600)
	os.Rename(filepath.Join(dir, "ready.tmp"), filepath.Join(dir, "ready"))
	fifo, err := os.OpenFile(filepath.Join(dir, "cmd"), os.O_RDWR, 0)
	if err != nil {
		fmt.Println("driver:", err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(fifo)
	for sc.Scan() {
		n, command, _ := strings.Cut(sc.Text(), "\t")
		if copyPath, ok := strings.CutPrefix(command, "exec "); ok {
			// Replace the run's program on the same pid.
			syscall.Exec(copyPath, []string{copyPath, "-driver"}, os.Environ())
		}
		go func() {
			out, _ := os.Create(filepath.Join(dir, n+".out"))
			c := exec.Command("/bin/sh", "-c", command)
			c.Stdout, c.Stderr = out, out
			c.Run()
			out.Close()
			code := -1
			if c.ProcessState != nil {
				code = c.ProcessState.ExitCode()
			}
			os.WriteFile(filepath.Join(dir, n+".rc.tmp"), []byte(strconv.Itoa(code)), 0o600)
			os.Rename(filepath.Join(dir, n+".rc.tmp"), filepath.Join(dir, n+".rc"))
		}()
	}
}

// cardJSON is what the tests read of a card.
type cardJSON struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	Changed string `json:"what_changed"`
	Mode    string `json:"mode"`
	Run     struct {
		ID    string `json:"id"`
		PID   int    `json:"pid"`
		Label string `json:"label"`
	} `json:"run"`
	Requester []struct {
		PID  int    `json:"pid"`
		Name string `json:"name"`
	} `json:"requester"`
	Key struct {
		Fingerprint string `json:"fingerprint"`
	} `json:"key"`
	Destination *struct {
		Fingerprint string   `json:"fingerprint"`
		Names       []string `json:"names"`
		Forwarding  bool     `json:"forwarding"`
	} `json:"destination"`
	Namespace string `json:"namespace"`
}

// cards lists the pending cards.
func (e *Env) cards() []cardJSON {
	e.t.Helper()
	var cs []cardJSON
	r := e.MustRun("postern", "approve", "--list", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &cs); err != nil {
		e.t.Fatalf("approve --list --json: %v\n%s", err, r.Stdout)
	}
	return cs
}

// WaitCard waits for a pending card.
func (e *Env) WaitCard() cardJSON {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cs := e.cards(); len(cs) > 0 {
			return cs[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no card appeared\n%s", e.whatHappened())
	return cardJSON{}
}

// NoCard checks, over a short while, that no card is pending.
func (e *Env) NoCard() {
	e.t.Helper()
	for i := 0; i < 5; i++ {
		if cs := e.cards(); len(cs) > 0 {
			e.t.Fatalf("unexpected card: %+v", cs[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// whatHappened reports, for a wait that failed, what the runs' commands
// printed and how they ended, and the end of each gateway's log.
func (e *Env) whatHappened() string {
	var b strings.Builder
	for _, d := range e.drivers {
		if log, _ := os.ReadFile(filepath.Join(d.dir, "driver.log")); len(log) > 0 {
			fmt.Fprintf(&b, "postern run printed:\n%s\n", log)
		}
		d.mu.Lock()
		n := d.next
		d.mu.Unlock()
		for i := 1; i <= n; i++ {
			out, _ := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("%d.out", i)))
			rc, err := os.ReadFile(filepath.Join(d.dir, fmt.Sprintf("%d.rc", i)))
			status := "still running"
			if err == nil {
				status = "exit " + string(rc)
			}
			fmt.Fprintf(&b, "job %d (%s):\n%s\n", i, status, out)
		}
	}
	for _, a := range e.agents {
		log := strings.Split(a.Log(), "\n")
		log = log[max(0, len(log)-40):]
		fmt.Fprintf(&b, "gateway log (end):\n%s\n", strings.Join(log, "\n"))
	}
	return b.String()
}
