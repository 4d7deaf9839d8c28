package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/postern/postern/internal/safetext"
)

// stoppedHint follows an SSH_AGENT_PID that names no agent.
const stoppedHint = `the agent it named has stopped; "postern status" shows the gateway that runs now, if any`

// killAgent sends SIGTERM to $SSH_AGENT_PID, as ssh-agent -k does, when
// that process is an agent: a variable left from an agent that stopped
// (a shell that outlived a reboot) may name another program since.
func killAgent(f *agentFlags, out io.Writer) error {
	s := os.Getenv("SSH_AGENT_PID")
	if s == "" {
		return errors.New("SSH_AGENT_PID not set, cannot kill agent")
	}
	// As ssh-agent, never init, nor what kill(2) takes for a process
	// group (0) or every process (-1).
	pid, err := strconv.Atoi(s)
	if err != nil || pid < 2 {
		return fmt.Errorf("SSH_AGENT_PID=%q, which is not a good PID", s)
	}
	// Held first (a pidfd, on Linux), then looked at: the signal goes to
	// the process that was looked at, not to one that took its pid since.
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	defer p.Release()
	if err := notAnAgent(pid); err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		if errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH) {
			return withHint(fmt.Errorf("SSH_AGENT_PID=%d names no process", pid), stoppedHint)
		}
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	if f.csh {
		fmt.Fprintln(out, "unsetenv SSH_AUTH_SOCK;")
		fmt.Fprintln(out, "unsetenv SSH_AGENT_PID;")
	} else {
		fmt.Fprintln(out, "unset SSH_AUTH_SOCK;")
		fmt.Fprintln(out, "unset SSH_AGENT_PID;")
	}
	fmt.Fprintf(out, "echo Agent pid %d killed;\n", pid)
	return nil
}

// notAnAgent says, on Linux, when process pid runs a program that is no
// agent: neither postern (whatever its path, or a build replaced since
// it started) nor ssh-agent. Where the executable cannot be read (another
// user's process), kill(2) decides.
func notAnAgent(pid int) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			return withHint(fmt.Errorf("SSH_AGENT_PID=%d names no process", pid), stoppedHint)
		}
	}
	if err != nil {
		return nil
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	name := filepath.Base(exe)
	if strings.HasPrefix(name, "postern") || name == "ssh-agent" {
		return nil
	}
	return withHint(fmt.Errorf("SSH_AGENT_PID=%d is %s (%s), not an agent: not killed", pid,
		safetext.Field(name, safetext.Line), safetext.Field(exe, safetext.Line)), stoppedHint)
}
