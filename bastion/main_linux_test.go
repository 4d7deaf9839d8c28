package bastion

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the processes of an adoption: with
// BASTION_TEST_ROLE set it is "adopter" (a child subreaper in a session
// of its own, as systemd --user is), "run" (its child, the leader of
// another session, as a terminal's shell is) or "orphan" (the run's
// child, which connects to the bastion at BASTION_TEST_SOCK once the run
// has exited and it was adopted, and writes the bastion's answer to
// BASTION_TEST_OUT).
func TestMain(m *testing.M) {
	switch os.Getenv("BASTION_TEST_ROLE") {
	case "adopter":
		os.Exit(adopter())
	case "run":
		os.Setenv("BASTION_TEST_RUN", strconv.Itoa(os.Getpid()))
		os.Exit(startRole("orphan", nil))
	case "orphan":
		os.Exit(orphan())
	}
	os.Exit(m.Run())
}

// startRole starts the test binary again in role, and does not wait.
func startRole(role string, attr *syscall.SysProcAttr) int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BASTION_TEST_ROLE="+role)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return 2
	}
	return 0
}

func adopter() int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 3
	}
	if rc := startRole("run", &syscall.SysProcAttr{Setsid: true}); rc != 0 {
		return rc
	}
	for { // the run, then the orphan it leaves
		if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
			return 0
		}
	}
}

func orphan() int {
	run := os.Getenv("BASTION_TEST_RUN")
	for deadline := time.Now().Add(10 * time.Second); strconv.Itoa(os.Getppid()) == run; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 4
		}
	}
	answer := "ok"
	c, err := Connect(os.Getenv("BASTION_TEST_SOCK"), Target{User: "alice", Host: "db-1", Port: 22})
	if err != nil {
		answer = "error " + err.Error()
	} else {
		c.Close()
	}
	if err := os.WriteFile(os.Getenv("BASTION_TEST_OUT"), []byte(answer), 0o600); err != nil {
		return 5
	}
	return 0
}
