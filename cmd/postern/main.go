// Command postern is an SSH agent that signs only for processes a person
// approved. See postern(1).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/heldsig"
)

// Version is set at build time with -ldflags "-X main.Version=…"; without
// it the module version is used.
var Version string

const usage = `Usage: postern COMMAND [ARGS]

Commands:
    agent [-cDdks] [-a SOCKET] [-t LIFE] [COMMAND [ARG...]]
                        run the agent (ssh-agent compatible)
    run [--label L] -- COMMAND [ARG...]
                        launch COMMAND as a run with its own agent socket
    approve [--list [--json] | ID [--once|--session]]
                        answer approval cards (interactive on a terminal)
    deny ID             deny a card
    sessions [--history] [--json]
                        live runs and session grants, or all from the audit log
    revoke GRANT|RUN|--all
                        end session grants now
    hosts list|add|import|remove
                        the host inventory that host and class rules match
    audit verify|show|new
                        check the audit log offline, decrypt it, or start
                        a new one
    activity [--since T] [--run R] [--json]
                        the audit log as a timeline
    journal [list|show ID|follow] [--json] | resolve ID | new
                        the bastion's command journal
    connect USER HOST PORT
                        ssh ProxyCommand helper for the bastion
    ssh-config          print the ssh_config block for the bastion
    status [--json]     boot id, vault state and epoch, counts, approvers
    why [--json]        the gateway's last decision for this process or run
    doctor [--json]     check the set-up and say what to fix
    check [--host H]... [--key K] [--exe P]... [--forwarded] [--json]
                        dry-run the policy for a request
    lock                lock the vault and wipe decrypted keys
    unlock              unlock the vault
    vault init|add|list|remove|passwd
                        manage the encrypted vault of keys
    completion bash|zsh|fish
                        print a shell completion script
    version             print the version

Commands that talk to a running agent find it through --socket PATH,
$SSH_AUTH_SOCK, or the well-known socket $XDG_RUNTIME_DIR/postern/agent.sock.
See postern(1).
`

// command is one subcommand: it parses its own flags and returns an error
// that decides the exit status (see exitCode).
type command func(args []string, out, errw io.Writer) error

var commands = map[string]command{
	"agent":      cmdAgent,
	"run":        cmdRun,
	"approve":    cmdApprove,
	"deny":       cmdDeny,
	"sessions":   cmdSessions,
	"audit":      cmdAudit,
	"activity":   cmdActivity,
	"journal":    cmdJournal,
	"connect":    cmdConnect,
	"ssh-config": cmdSSHConfig,
	"revoke":     cmdRevoke,
	"hosts":      cmdHosts,
	"status":     cmdStatus,
	"lock":       cmdLock,
	"unlock":     cmdUnlock,
	"vault":      cmdVault,
	"version":    cmdVersion,
	"why":        cmdWhy,
	"check":      cmdCheck,
	"completion": cmdCompletion,
	"doctor":     cmdDoctor,
}

func main() {
	// A confined run's helper is postern itself, started again; so is
	// what releases the signals a gateway holds for what it starts.
	confine.Init()
	heldsig.Init()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command args name. Output that could not be written (a
// full disk, a closed standard output) fails a command that did not fail
// already: a script never takes what it got for the whole of it.
func run(args []string, out, errw io.Writer) int {
	o := &checkedWriter{w: out}
	code := dispatch(args, o, errw)
	if o.err != nil && code == exitOK {
		errorf(errw, "%v", o.err)
		return exitFailure
	}
	return code
}

// checkedWriter keeps the first error of writing to w: a command's
// output goes on unchecked (fmt.Fprintf) and is judged once at the end.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.err = err
	return n, err
}

func dispatch(args []string, out, errw io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(errw, usage)
		errorf(errw, "name a command")
		return exitUsage
	}
	switch args[0] {
	case "help":
		if len(args) > 1 {
			// "postern help vault" is "postern vault --help".
			return dispatch([]string{args[1], "--help"}, out, errw)
		}
		fmt.Fprint(out, usage)
		return exitOK
	case "-h", "-help", "--help":
		fmt.Fprint(out, usage)
		return exitOK
	case "-V", "--version":
		args[0] = "version"
	}
	cmd := commands[args[0]]
	if cmd == nil {
		errorf(errw, "unknown command %q", args[0])
		hintf(errw, `run "postern --help" for the list of commands`)
		return exitUsage
	}
	return report(out, errw, args[0], cmd(args[1:], out, errw))
}

const versionUsage = `Usage: postern version

Print postern's version.
`

func cmdVersion(args []string, out, _ io.Writer) error {
	fs := newFlags("version", versionUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noOperands(fs)(); err != nil {
		return err
	}
	v := Version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(out, "postern %s\n", v)
	return nil
}
