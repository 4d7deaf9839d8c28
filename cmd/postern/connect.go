package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/xdg"
)

const connectUsage = `Usage: postern connect [--socket PATH] [--fdpass] USER HOST PORT
       postern ssh-config [--socket PATH] [HOST-PATTERN...]

connect is the ssh ProxyCommand that reaches a host through postern's
local bastion (ssh passes %r %h %p). With --fdpass it hands the connected
socket to ssh (ProxyUseFdpass yes) and exits. ssh-config prints the
ssh_config block to paste, for the patterns given or the config's
[bastion] hosts.
`

// bastionSocket is the bastion's socket: --socket, else where the
// gateway of $SSH_AUTH_SOCK listens with the configuration it reads.
func bastionSocket(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	var configured string
	if path, err := xdg.ConfigFile(); err == nil {
		if cfg, err := config.Load(path); err == nil {
			configured = cfg.Bastion.Socket
		}
	}
	return api.BastionSocket(configured, os.Getenv("SSH_AUTH_SOCK"))
}

func cmdConnect(args []string, out, errw io.Writer) error {
	fs := newFlags("connect", connectUsage)
	sock := fs.String("socket", "", "the bastion's socket")
	fdpass := fs.Bool("fdpass", false, "pass the connected socket to ssh on stdout (ProxyUseFdpass)")
	// ssh's %r %h %p, exactly: none is taken for a flag.
	if err := parseCommand(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 3 {
		return usagef("connect: want USER HOST PORT (ssh's %%r %%h %%p)")
	}
	t, err := api.ParseBastionTarget(fs.Arg(0), fs.Arg(1), fs.Arg(2))
	if err != nil {
		return usagef("connect: %v", err)
	}
	path, err := bastionSocket(*sock)
	if err != nil {
		return err
	}
	c, err := api.DialBastion(path, t)
	if err != nil {
		// ssh shows this line to the user and exits 255.
		return err
	}
	if *fdpass {
		return passFD(c)
	}
	return splice(c)
}

// passFD sends the connection to ssh over stdout, as ProxyUseFdpass
// expects: one byte of data carrying the descriptor.
func passFD(c *net.UnixConn) error {
	f, err := c.File()
	if err != nil {
		return err
	}
	defer f.Close()
	c.Close()
	if err := unix.Sendmsg(int(os.Stdout.Fd()), []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return fmt.Errorf("passing the connection to ssh (is ProxyUseFdpass set?): %w", err)
	}
	return nil
}

// splice copies stdin to the bastion and the bastion to stdout.
func splice(c *net.UnixConn) error {
	go func() {
		io.Copy(c, os.Stdin)
		c.CloseWrite()
	}()
	_, err := io.Copy(os.Stdout, c)
	return err
}

func cmdSSHConfig(args []string, out, errw io.Writer) error {
	fs := newFlags("ssh-config", connectUsage)
	sock := fs.String("socket", "", "the bastion's socket")
	if err := parse(fs, args); err != nil {
		return err
	}
	path, err := bastionSocket(*sock)
	if err != nil {
		return err
	}
	// ssh runs the ProxyCommand wherever ssh is run from.
	if path, err = filepath.Abs(path); err != nil {
		return err
	}
	hosts := fs.Args()
	cfgPath, _ := xdg.ConfigFile()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	if len(hosts) == 0 {
		hosts = cfg.Bastion.Hosts
	}
	if len(hosts) == 0 {
		return usagef("ssh-config: name the host patterns to send through the bastion, or list them as [bastion] hosts in %s", cfgPath)
	}
	known, err := xdg.StateFile(xdg.BastionKnownHostsFile)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if !cfg.Bastion.Enabled {
		warningf(errw, "the bastion is not enabled: add [bastion] enabled = true to %s", cfgPath)
	} else if _, st := answeringGateway(""); st != nil && st.Bastion == nil {
		warningf(errw, "the running gateway does not serve the bastion: it started before %s enabled it; restart it", cfgPath)
	}
	block, err := sshConfigBlock(hosts, self, path, known)
	if err != nil {
		return err
	}
	io.WriteString(out, block)
	return nil
}

// sshConfigBlock is the ssh_config block that sends hosts through the
// bastion at sock, with self as postern connect. ssh expands % in both
// lines and runs the ProxyCommand with sh: the paths are quoted for
// each, whatever they hold, and ssh's %r %h %p follow "--", so that a
// user that looks like a flag is taken for one.
func sshConfigBlock(hosts []string, self, sock, known string) (string, error) {
	for _, p := range []string{self, sock, known} {
		if strings.ContainsAny(p, "\r\n") {
			return "", fmt.Errorf("ssh-config: %s: an ssh_config line cannot hold a path with a line break", safetext.Quote(p, safetext.Name))
		}
	}
	return fmt.Sprintf(`# postern bastion: commands to these hosts are approved, relayed and journaled by postern.
Host %s
    ProxyCommand %s connect --socket %s --fdpass -- %%r %%h %%p
    ProxyUseFdpass yes
    UserKnownHostsFile %s
    StrictHostKeyChecking yes
    CheckHostIP no
    IdentityAgent none
    ForwardAgent no
`, strings.Join(hosts, " "), sshPercent(shellWord(self)), sshPercent(shellWord(sock)), sshPercent(sshConfigWord(known))), nil
}

// shellWord quotes s as one word for sh.
func shellWord(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sshConfigWord quotes s as one argument of an ssh_config keyword.
func sshConfigWord(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// sshPercent escapes the % that ssh would expand.
func sshPercent(s string) string { return strings.ReplaceAll(s, "%", "%%") }
