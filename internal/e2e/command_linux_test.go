package e2e

import (
	"os/exec"
	"syscall"
)

// testCommand is exec.Command for a process a test starts, killed with
// the test binary whatever kills it (go test's own timeout, a signal):
// no gateway, console or run is left behind. (The signal comes when the
// thread that started the process exits; the tests lock no goroutine to
// its thread.)
func testCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
