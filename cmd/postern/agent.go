package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/postern/postern/gateway"
	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/getopt"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/internal/hugepages"
	"github.com/postern/postern/internal/safesocket"
)

const agentUsage = `Usage: postern agent [-c | -s] [-Dd] [-a SOCKET] [-t LIFE] [--upstream SOCKET] [COMMAND [ARG...]]
       postern agent [-c | -s] -k
       postern agent --ensure [-c | -s] [-a SOCKET] [-t LIFE]

Options (as ssh-agent(1)):
    -a SOCKET   bind the agent socket to SOCKET
    -c, -s      print C-shell or Bourne shell commands (default from $SHELL)
    -D          stay in the foreground (logging only warnings and errors)
    -d          stay in the foreground and log every request to stderr
    -k          kill the agent named by $SSH_AGENT_PID
    -P LIST     provider libraries ssh-add -s and FIDO keys may load, as
                comma-separated patterns (default /usr/lib*/*,/usr/local/lib*/*)
    -t LIFE     default lifetime of keys added with ssh-add (600, 10m, 1h30m)
    -T          the socket in a fresh directory under $TMPDIR: postern's
                default (OpenSSH 10.1's ssh-agent defaults to ~/.ssh/agent)
    -U          accepted: postern never removes sockets under ~/.ssh/agent
    -E, -O      accepted for compatibility and ignored
    --upstream SOCKET
                list the keys of the agent at SOCKET beside postern's own
                and gate them like postern's own (default: upstream in
                the configuration file)

With COMMAND, run it with the agent's environment and exit when it exits.
Without -D or -d, the agent detaches once its socket listens. With -D or
-d, it serves the socket a service manager passed (LISTEN_FDS; see
contrib/systemd/user/postern.socket).

--ensure uses the well-known socket ($XDG_RUNTIME_DIR/postern/agent.sock,
or agent.sock in the state directory without $XDG_RUNTIME_DIR) unless -a
names one, reuses the agent already serving it or starts one, and also
prints where approval cards will appear.
`

// agentSpec is ssh-agent's getopt string.
const agentSpec = "cDdksTUE:a:O:P:t:"

type agentFlags struct {
	csh, sh, fg, debug, kill bool
	socket                   string
	providers                string
	upstream                 string
	privateDir               string // created for this instance; removed at exit
	lifetime                 time.Duration
	command                  []string
	ensure                   bool              // reuse the agent at the socket, or start one
	listener                 *net.UnixListener // passed by a service manager (socket activation)
	notify                   string            // where the service manager waits for readiness (NOTIFY_SOCKET)
	inherited                []int             // descriptors the agent was started with, kept from the programs it starts
}

func parseAgentFlags(args []string) (*agentFlags, error) {
	ensure := false
	if len(args) > 0 && args[0] == "--ensure" {
		ensure, args = true, args[1:]
	}
	opts, rest, err := getopt.Parse(args, agentSpec, "upstream=")
	if err != nil {
		return nil, usagef("agent: %v", err)
	}
	f := &agentFlags{command: rest, ensure: ensure}
	for _, o := range opts {
		switch o.Name {
		case 'c':
			f.csh = true
		case 's':
			f.sh = true
		case 'D':
			f.fg = true
		case 'd':
			f.fg, f.debug = true, true
		case 'k':
			f.kill = true
		case 'a':
			f.socket = o.Value
		case 't':
			if f.lifetime, err = getopt.Lifetime(o.Value); err != nil {
				return nil, usagef("agent: -t %s: %v", o.Value, err)
			}
		case 'P':
			f.providers = o.Value
		case 'E', 'O', 'T', 'U':
			// -T names postern's default place; -U keeps ssh-agent
			// from cleaning ~/.ssh/agent, which postern never does.
		}
		if o.Long == "upstream" {
			f.upstream = o.Value
		}
	}
	if f.csh && f.sh {
		return nil, usagef("agent: -c and -s cannot be used together")
	}
	if !f.csh && !f.sh {
		f.csh = strings.HasSuffix(os.Getenv("SHELL"), "csh")
	}
	if f.fg && len(f.command) > 0 {
		return nil, usagef("agent: -D and -d cannot be used with a command")
	}
	if f.ensure && (f.fg || f.kill || len(f.command) > 0) {
		return nil, usagef("--ensure cannot be used with -D, -d, -k or a command")
	}
	return f, nil
}

func cmdAgent(args []string, out, errw io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return &helpRequest{agentUsage}
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
	}
	f, err := parseAgentFlags(args)
	if err != nil {
		return err
	}
	if f.kill {
		return killAgent(f, out)
	}
	if f.ensure {
		return ensureAgent(f, out)
	}
	// Before anything is opened: these may start the program again,
	// once for both.
	startAgain := hugepages.TurnOff()
	heldsig.Hold(startAgain, hugepages.ChildEnv(), gateway.HeldSignals...)
	if f.fg && os.Getenv(envDetached) == "" {
		if err := takeActivated(f); err != nil {
			return err
		}
		takeNotifySocket(f)
	}
	if f.listener != nil {
		// The service manager's socket: its path, no directory of ours.
	} else if f.socket == "" {
		dir, err := safesocket.PrivateDir()
		if err != nil {
			return fmt.Errorf("creating a private socket directory: %w", err)
		}
		f.socket = filepath.Join(dir, "agent."+strconv.Itoa(os.Getppid()))
		f.privateDir = dir
	} else if abs, err := filepath.Abs(f.socket); err == nil {
		f.socket = abs
	}
	if f.upstream != "" {
		if abs, err := filepath.Abs(f.upstream); err == nil {
			f.upstream = abs
		}
	}
	if d := os.Getenv(envPrivateDir); d != "" && d == filepath.Dir(f.socket) {
		f.privateDir = d
	}
	if f.privateDir != "" {
		defer removePrivateDir(f.privateDir, f.socket)
	}
	switch {
	case os.Getenv(envDetached) != "":
		return runDetachedChild(f)
	case len(f.command) > 0:
		return runWithCommand(f, errw)
	case f.fg:
		return runForeground(f, out, errw)
	default:
		return detach(f, out)
	}
}

// evalLines prints what ssh-agent prints for eval. In the foreground
// ssh-agent omits SSH_AGENT_PID, and so does postern.
func evalLines(w io.Writer, f *agentFlags, pid int, withPID bool) {
	sock := shellQuote(f.socket)
	if f.csh {
		fmt.Fprintf(w, "setenv SSH_AUTH_SOCK %s;\n", sock)
		if withPID {
			fmt.Fprintf(w, "setenv SSH_AGENT_PID %d;\n", pid)
		}
	} else {
		fmt.Fprintf(w, "SSH_AUTH_SOCK=%s; export SSH_AUTH_SOCK;\n", sock)
		if withPID {
			fmt.Fprintf(w, "SSH_AGENT_PID=%d; export SSH_AGENT_PID;\n", pid)
		}
	}
	fmt.Fprintf(w, "echo Agent pid %d;\n", pid)
}

// shellQuote quotes s for both sh and csh when it holds anything but
// plain path characters.
func shellQuote(s string) string {
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+,:@%=", c)) {
			safe = false
			break
		}
	}
	if safe && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

func newGateway(f *agentFlags, log *slog.Logger, ready func()) (*gateway.Gateway, error) {
	if err := harden.Apply(); err != nil {
		return nil, fmt.Errorf("cannot make the agent non-dumpable: %w", err)
	}
	f.inherited = harden.KeepInherited()
	return gateway.New(gateway.Options{
		Socket:    f.socket,
		Listener:  f.listener,
		Lifetime:  f.lifetime,
		Providers: f.providers,
		Upstream:  f.upstream,
		Log:       log,
		Ready:     ready,
	})
}

// daemonLogger returns the gateway's logger, writing text records of
// level and above to w. It also sends the standard logger, through which
// x/crypto's agent server reports malformed requests, to it at debug
// level: a setting for the whole process, made once here.
//
// The levels: a detached agent logs information to its log file; in the
// foreground (-D) and with a command, where its standard error is the
// person's terminal, only warnings and errors, as ssh-agent is silent;
// -d logs every request.
func daemonLogger(w io.Writer, level slog.Level) *slog.Logger {
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(h, slog.LevelDebug).Writer())
	return slog.New(h)
}

// runForeground serves in this process (-D, -d), printing the eval lines
// once the socket listens.
func runForeground(f *agentFlags, out, errw io.Writer) error {
	level := slog.LevelWarn
	if f.debug {
		level = slog.LevelDebug
	}
	logger := daemonLogger(errw, level)
	g, err := newGateway(f, logger, func() {
		evalLines(out, f, os.Getpid(), false)
		if f.notify != "" {
			if err := safesocket.NotifyReady(f.notify); err != nil {
				logger.Warn("the service manager was not told the agent is ready", "err", err)
			}
		}
	})
	if err != nil {
		return err
	}
	return g.Run(signalContext(context.Background()))
}

// signalContext returns a context canceled by SIGTERM or SIGINT.
func signalContext(ctx context.Context) context.Context {
	ctx, _ = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	return ctx
}

// forwardSignals passes SIGTERM, SIGINT and SIGHUP to p until stop is
// called: with a command, the agent ends when the command does.
func forwardSignals(p *os.Process) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			p.Signal(s)
		}
	}()
	return func() { signal.Stop(sigs); close(sigs) }
}

// runWithCommand serves while COMMAND runs with SSH_AUTH_SOCK and
// SSH_AGENT_PID set, and exits with its status.
func runWithCommand(f *agentFlags, errw io.Writer) error {
	ready := make(chan struct{})
	g, err := newGateway(f, daemonLogger(errw, slog.LevelWarn), func() { close(ready) })
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		return err
	}
	cmd := exec.Command(f.command[0], f.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = inheritedFiles(f.inherited)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+f.socket, "SSH_AGENT_PID="+strconv.Itoa(os.Getpid()))
	// The person's command runs with the signal mask it would have had.
	heldsig.Release(cmd)
	// The person's command runs with the huge pages it would have had.
	restore := hugepages.Allow()
	err = cmd.Start()
	restore()
	if err != nil {
		cancel()
		<-done
		return fmt.Errorf("%s: %w", f.command[0], err)
	}
	stop := forwardSignals(cmd.Process)
	werr := cmd.Wait()
	stop()
	cancel()
	if err := <-done; err != nil {
		warningf(errw, "agent: %v", err)
	}
	return exitStatusOf(werr)
}

// inheritedFiles places the descriptors the agent was started with
// where COMMAND finds them, at the same numbers (ExtraFiles puts its
// i-th at 3+i; a gap is closed), as ssh-agent's command gets them: a
// make jobserver's pipe, a harness's descriptor.
func inheritedFiles(fds []int) []*os.File {
	if len(fds) == 0 {
		return nil
	}
	files := make([]*os.File, fds[len(fds)-1]-2)
	for _, fd := range fds {
		files[fd-3] = os.NewFile(uintptr(fd), "inherited")
	}
	return files
}

// removePrivateDir removes the directory made for the agent socket sock
// (no -a) as the agent exits, once the sockets in it are gone, and in it
// the socket directories of runs that live on: no gateway listens there
// again, as one at a path of the person's choosing does after a restart
// (a run's directory stays for that). Only empty directories go.
func removePrivateDir(dir, sock string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := api.RunSocketDir(sock, e.Name()); ok && e.IsDir() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir)
}
