package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

const runUsage = `Usage: postern run [--label LABEL] [--socket PATH] -- COMMAND [ARG...]

Launch COMMAND as a run: the gateway inspects it after exec, mints a launch
nonce and gives it its own SSH_AUTH_SOCK, which serves only COMMAND and its
live descendants. Approvals for the run end when COMMAND exits. The label is
shown to approvers; it grants nothing. The exit status is COMMAND's.
`

// forwardedToRun are the signals postern run passes to its command.
// SIGINT and SIGQUIT from the terminal reach the command directly (it is
// in the same process group); postern run only catches them, so that it
// outlives the command and reports its status.
var forwardedToRun = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

func cmdRun(args []string, out, errw io.Writer) error {
	fs := newFlags("run", runUsage)
	label := fs.String("label", "", "a label for approvers (display only)")
	c, err := gatewayFlags(fs, args, func() error {
		if fs.NArg() == 0 {
			return usagef("run: name the command to run after --")
		}
		return nil
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	prep, err := c.PrepareRun(ctx, *label)
	if err != nil {
		return err
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(withoutEnv(os.Environ(), "SSH_AUTH_SOCK", "POSTERN_RUN"), "SSH_AUTH_SOCK="+prep.Socket, "POSTERN_RUN="+prep.ID)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, append(forwardedToRun, syscall.SIGINT, syscall.SIGQUIT)...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", fs.Arg(0), err)
	}
	if err := c.StartRun(ctx, prep.ID, cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL) {
			// It ended on its own before the gateway looked at it
			// (a quick command), not by the kill: its status is the
			// answer.
			return exitStatusOf(werr)
		}
		return fmt.Errorf("the gateway did not register the run: %w", err)
	}
	go func() {
		for s := range sigs {
			if s != syscall.SIGINT && s != syscall.SIGQUIT {
				cmd.Process.Signal(s)
			}
		}
	}()
	return exitStatusOf(cmd.Wait())
}

// withoutEnv drops the named variables from env.
func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if len(kv) > len(n) && kv[:len(n)+1] == n+"=" {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
