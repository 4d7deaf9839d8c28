package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/hugepages"
	"github.com/postern/postern/internal/ptyrelay"
)

const runUsage = `Usage: postern run [--label LABEL] [--no-sandbox] [--socket PATH] -- COMMAND [ARG...]

Launch COMMAND as a run: the gateway inspects it after exec, mints a launch
nonce and gives it its own SSH_AUTH_SOCK, which serves only COMMAND and its
live descendants. Approvals for the run end when COMMAND exits. The label is
shown to approvers; it grants nothing. The exit status is COMMAND's.

On Linux the run is confined: its own user, mount, pid and IPC namespaces and
Landlock. It sees only its own agent socket, not postern's control socket,
state or runtime directories, nor the user's tmux, screen or D-Bus
sockets, nor the unix sockets only the user may use (an ssh ControlMaster,
docker's), nor the X authority file; the network stays; postern's configuration, known_hosts, postern's executable,
the PATH directories inside writable trees and the working directory's
git hooks and configuration are read-only; only the working directory,
the [run] read_write trees (default none) and the run's own cache
directory (~/.cache/postern/run, shown at ~/.cache) are writable. Started
from a terminal, it has a terminal of its own, relayed while it is the
foreground job: in the background (&, bg) it reads nothing typed at the
shell. Ctrl-Z stops the whole run. A confined run does not start in the
home directory, ~/.config, ~/.local/share (or a directory holding one),
inside ~/.config/systemd, autostart, environment.d or git, or
~/.local/share/systemd, or in a directory on PATH, "." included (start
it from a project's directory), nor where the repository's .git or a
PATH directory is a symbolic link in the working directory. --no-sandbox runs
it unconfined, and every card for it says so.
See postern-run(1).
`

// forwardedToRun are the signals postern run passes to its command,
// unless it was started ignoring them (confine.NotifyUnlessIgnored).
// SIGINT and SIGQUIT from the terminal reach the command directly (it is
// in the same process group), or, confined, through the run's own
// terminal (ptyrelay); postern run only catches them, so that it
// outlives the command and reports its status.
var forwardedToRun = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

// A launched is the command of a run, confined or not.
type launched interface {
	pid() int
	level() confine.Level
	signal(os.Signal) error
	wait() error
	// stop ends the command when the gateway did not register it: ended
	// reports that it had ended on its own, its exit status in err, and
	// otherwise it is killed.
	stop() (ended bool, err error)
}

func cmdRun(args []string, out, errw io.Writer) error {
	// Open as long as its run: its memory without the kernel's huge
	// pages, as the gateway's. This may start the program again, so it
	// comes first: before anything is printed (a warning would be
	// printed twice) or a descriptor is marked to close at an exec.
	hugepages.Off()
	fs := newFlags("run", runUsage)
	label := fs.String("label", "", "a label for approvers (display only)")
	noSandbox := fs.Bool("no-sandbox", false, "run unconfined (every card for the run says so)")
	c, err := gatewayFlagsWith(parseCommand, fs, args, func() error {
		if fs.NArg() == 0 {
			return usagef("run: name the command to run after --")
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Only standard input, output and error reach the run's program.
	if err := confine.CloseInheritedOnExec(); err != nil {
		return fmt.Errorf("run: closing inherited descriptors: %w", err)
	}
	// The program is looked up before anything is asked of the gateway:
	// a name mistyped is said as such, confined or not.
	path, err := lookProgram(fs.Arg(0))
	if err != nil {
		return withHint(fmt.Errorf("run: %w", err), "check the command's name, or give its path")
	}
	confined := !*noSandbox
	if err := confine.Available(); errors.Is(err, confine.ErrUnsupported) {
		warningf(errw, "%v: the run is unconfined", err)
		confined = false
	} else if err != nil && confined {
		return err
	}
	ctx := context.Background()
	prep, err := c.PrepareRun(ctx, *label)
	if err != nil {
		return err
	}
	// The vault's passphrase file is not named to the run (and a
	// confined run does not see it).
	env := append(withoutEnv(os.Environ(), "SSH_AUTH_SOCK", "POSTERN_RUN", envPassphraseFile), "SSH_AUTH_SOCK="+prep.Socket, "POSTERN_RUN="+prep.ID)
	sigs := make(chan os.Signal, 8)
	confine.NotifyUnlessIgnored(sigs, append(forwardedToRun, syscall.SIGINT, syscall.SIGQUIT)...)
	defer signal.Stop(sigs)
	var l launched
	if confined {
		l, err = startConfined(prep, path, fs.Args(), env, errw)
	} else {
		l, err = startPlain(path, fs.Args(), env)
	}
	if err != nil {
		// Release the prepared run: no process will ever be reported.
		c.StartRun(ctx, prep.ID, 0, confine.Level{})
		return err
	}
	// From now on no program of the user may read or trace the
	// supervisor. Not before: while it is dumpable it can still write the
	// uid map of the run's new user namespace (the run, confined, cannot
	// reach it meanwhile).
	if err := harden.Apply(); err != nil {
		l.signal(syscall.SIGKILL)
		l.wait()
		return fmt.Errorf("hardening postern run: %w", err)
	}
	if err := c.StartRun(ctx, prep.ID, l.pid(), l.level()); err != nil {
		if ended, status := l.stop(); ended {
			// The command ended before the gateway could inspect it: it
			// ran, and never had its socket served.
			return status
		}
		return fmt.Errorf("the gateway did not register the run: %w", err)
	}
	sp, whole := l.(suspender)
	var t *ptyrelay.Relay // the run's own terminal
	var stops <-chan struct{}
	switch {
	case whole && sp.terminal() != nil:
		// The run's programs stop on their own terminal, where the
		// relay passes Ctrl-Z; the relay ignores SIGTTIN and SIGTTOU.
		t, stops = sp.terminal(), sp.stops()
		confine.NotifyUnlessIgnored(sigs, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGWINCH)
	case whole:
		confine.NotifyUnlessIgnored(sigs, confine.JobStops...)
	}
	go func() {
		for {
			select {
			case <-stops:
				// The program stopped on the run's terminal (Ctrl-Z).
				stopWhole(sp, nil)
			case s := <-sigs:
				switch {
				case s == syscall.SIGCONT:
					t.Continue()
				case s == syscall.SIGWINCH:
					t.Resize()
				case s == syscall.SIGINT || s == syscall.SIGQUIT:
					switch {
					case t != nil:
						// Through the run's own terminal.
						t.Signal(s.(syscall.Signal))
					case !confine.TerminalMaySend():
						// Sent to postern run alone (no terminal could
						// have): passed on, or it would go nowhere.
						l.signal(s)
					}
					// Else the terminal sent them to the command too.
				case t == nil && slices.Contains(confine.JobStops, s):
					stopWhole(sp, s)
				default:
					// SIGTSTP with a terminal of the run's own is as a
					// Ctrl-Z on it: the helper's report stops postern
					// run (stops).
					l.signal(s)
				}
			}
		}
	}()
	return l.wait()
}

// startConfined starts the command confined, with what the gateway asks
// to hide and show, and the user's session hidden.
func startConfined(prep *api.RunPrepared, path string, argv, env []string, errw io.Writer) (launched, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	s := &confine.Spec{
		Path: path, Args: argv, Env: env, Dir: dir,
		ReadWrite: prep.Confine.ReadWrite,
		ReadOnly:  prep.Confine.ReadOnly,
		Hide:      prep.Confine.Hide,
		// The directory of the run's socket, where a restarted gateway
		// listens again.
		Sockets: append([]string{filepath.Dir(prep.Socket)}, prep.Confine.Sockets...),
	}
	s.Session(env)
	if err := s.SSHIncludes(env); err != nil {
		return nil, err
	}
	complete, err := s.Repository(env)
	if err != nil {
		return nil, err
	}
	if !complete {
		warningf(errw, "the working directory is too large to search whole for git repositories: those deeper in it than were searched are not protected from the run (postern-run(1))")
	}
	if err := s.Cache(env); err != nil {
		return nil, err
	}
	if err := s.HideSockets(); err != nil {
		return nil, fmt.Errorf("cannot confine the run: listing the sockets to hide: %w", err)
	}
	if p := os.Getenv(envPassphraseFile); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			s.Hide = append(s.Hide, abs)
		}
	}
	s.Resolve()
	if err := s.Commands(env); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	// The run's programs get a terminal of their own, so that nothing
	// of the run can read the person's (ptyrelay).
	std := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	t, err := ptyrelay.Open(std)
	if err != nil {
		warningf(errw, "%v: the run shares this terminal", err)
	}
	shared := err != nil
	std = t.Files(std)
	r, err := confine.Start(s, std[0], std[1], std[2], t.Terminal())
	if err != nil {
		t.Close()
		return nil, err
	}
	// The program may ignore the Ctrl-Z its terminal sends: the helper
	// stops the whole run regardless, as for a job the person's terminal
	// stops, and its report stops postern run (stops).
	t.Start(func() { r.Signal(syscall.SIGTSTP) })
	return confinedRun{r, t, shared}, nil
}

type confinedRun struct {
	r *confine.Run
	t *ptyrelay.Relay // nil when postern run has no terminal
	// shared: postern run has a terminal, and the run shares it (no
	// terminal of its own could be made): the card says so.
	shared bool
}

// A suspender stops every process of its run when the terminal stops the
// job, not only those in the job's process group (see confine.Run.Suspend).
type suspender interface {
	suspend(os.Signal) // nil: the run stopped already (stops)
	resume()
	// terminal is the run's own terminal, or nil.
	terminal() *ptyrelay.Relay
	// stops receives when the run's program stopped on its terminal,
	// and so the whole run.
	stops() <-chan struct{}
}

func (c confinedRun) suspend(s os.Signal) {
	if s != nil {
		c.r.Suspend(s)
	}
	c.t.Pause()
}

func (c confinedRun) resume() {
	c.r.Resume()
	c.t.Continue()
}

func (c confinedRun) terminal() *ptyrelay.Relay { return c.t }
func (c confinedRun) stops() <-chan struct{}    { return c.r.Stops() }

// stopWhole stops the job as the terminal asked with sig (nil: as the
// run's program did): the whole run first, then postern run itself,
// which the shell waits for; once continued (fg, bg), the whole run
// again.
func stopWhole(sp suspender, sig os.Signal) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	sp.suspend(sig)
	// The stop reaches every thread a moment after kill returns: the
	// continuation is the SIGCONT that ends it.
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
	sp.resume()
}

func (c confinedRun) pid() int { return c.r.PID }
func (c confinedRun) level() confine.Level {
	l := c.r.Level
	l.SharedTerminal = c.shared
	return l
}
func (c confinedRun) signal(s os.Signal) error { return c.r.Signal(s) }

// stop waits up to a second for the helper to report the program's end.
func (c confinedRun) stop() (bool, error) {
	if c.r.Exited(time.Second) {
		return true, c.wait()
	}
	c.signal(syscall.SIGKILL)
	c.wait()
	return false, nil
}

func (c confinedRun) wait() error {
	code, err := c.r.Wait()
	// The run's last output, then the person's terminal as it was.
	c.t.Close()
	if err != nil {
		return err
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// startPlain starts the command unconfined, its program at path.
func startPlain(path string, argv, env []string) (launched, error) {
	cmd := &exec.Cmd{Path: path, Args: argv}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	// The person's program, with the huge pages it would have had.
	restore := hugepages.Allow()
	err := cmd.Start()
	restore()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	return plainRun{cmd}, nil
}

type plainRun struct{ cmd *exec.Cmd }

func (p plainRun) pid() int                 { return p.cmd.Process.Pid }
func (p plainRun) level() confine.Level     { return confine.Level{} }
func (p plainRun) signal(s os.Signal) error { return p.cmd.Process.Signal(s) }
func (p plainRun) wait() error              { return exitStatusOf(p.cmd.Wait()) }

// stop kills the command and reads how it ended: by the kill, or on its
// own before it. A command that had ended, or was ending, as the gateway
// looked at it (its memory released, the parent not yet told) ended on
// its own: a signal does not change the status of a process already
// exiting, which a peek at the child before the kill could miss.
func (p plainRun) stop() (bool, error) {
	p.cmd.Process.Signal(syscall.SIGKILL)
	err := p.cmd.Wait()
	if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() && st.Signal() == syscall.SIGKILL {
		return false, nil
	}
	return true, exitStatusOf(err)
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
