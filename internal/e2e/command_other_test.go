//go:build !linux

package e2e

import (
	"os/exec"
	"syscall"
)

// testCommand is exec.Command for a process a test starts (no
// parent-death signal here).
func testCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	return cmd
}
