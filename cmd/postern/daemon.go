package main

// Daemonizing: "postern agent" without -D or -d starts itself again as a
// daemon in a new session, waits until the daemon's sockets listen, and
// prints the eval lines, as ssh-agent does.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/internal/hugepages"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/xdg"
)

// Environment between a detaching agent and the daemon it starts.
const (
	envDetached   = "POSTERN_AGENT_DETACHED"    // set in the daemon: report readiness on fd 3
	envPrivateDir = "POSTERN_AGENT_PRIVATE_DIR" // the directory the daemon removes at exit
)

// detach starts the daemon in a new session with its stdio closed, waits
// until its socket listens, and prints the eval lines. The caller's
// eval "$(postern agent -s)" returns as soon as this process exits.
func detach(f *agentFlags, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath, err := xdg.StateFile(xdg.AgentLogFile)
	if err != nil {
		return err
	}
	if err := xdg.EnsureDir(filepath.Dir(logPath)); err != nil {
		return err
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the agent log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	args := []string{"agent", "-D", "-a", f.socket}
	if f.lifetime > 0 {
		args = append(args, "-t", strconv.Itoa(int(f.lifetime/time.Second)))
	}
	if f.providers != "" {
		args = append(args, "-P", f.providers)
	}
	if f.upstream != "" {
		args = append(args, "--upstream", f.upstream)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), envDetached+"=1", envPrivateDir+"="+f.privateDir)
	cmd.Env = append(cmd.Env, hugepages.ChildEnv()...)
	cmd.Env = append(cmd.Env, heldsig.ChildEnv()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, logf
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return fmt.Errorf("starting the agent: %w", err)
	}
	pw.Close()
	status := bufio.NewReader(pr)
	line, _ := status.ReadString('\n')
	line = strings.TrimSpace(line)
	if line != "ok" {
		hint, _ := status.ReadString('\n')
		pr.Close()
		cmd.Wait()
		if msg, ok := strings.CutPrefix(line, "error: "); ok {
			err := errors.New(msg)
			if hint, ok := strings.CutPrefix(strings.TrimSpace(hint), "hint: "); ok {
				err = withHint(err, hint)
			}
			return err
		}
		return fmt.Errorf("the agent exited before its socket was ready; see %s", logPath)
	}
	pr.Close()
	pid := cmd.Process.Pid
	cmd.Process.Release()
	evalLines(out, f, pid, true)
	return nil
}

// runDetachedChild is the daemon started by detach: it reports readiness,
// or the error that prevented it and the hint for it, on fd 3.
func runDetachedChild(f *agentFlags) error {
	os.Unsetenv(envDetached)
	os.Unsetenv(envPrivateDir)
	status := os.NewFile(3, "status")
	g, err := newGateway(f, daemonLogger(os.Stderr, slog.LevelInfo), func() {
		fmt.Fprintln(status, "ok")
		status.Close()
	})
	if err == nil {
		err = g.Run(signalContext(context.Background()))
	}
	if err != nil {
		// One line, as the parent reads it.
		fmt.Fprintf(status, "error: %s\n", safetext.Terminal(err.Error()))
		if h := hintFor("agent", err); h != "" {
			fmt.Fprintf(status, "hint: %s\n", h)
		}
	}
	return err
}
