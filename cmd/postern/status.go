package main

import (
	"context"
	"fmt"
	"io"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
)

const statusUsage = `Usage: postern status [--json] [--socket PATH]

Print the running gateway's boot id, vault state and epoch, and counts.
`

func cmdStatus(args []string, out, errw io.Writer) error {
	fs := newFlags("status", statusUsage)
	asJSON := fs.Bool("json", false, "print JSON")
	c, err := gatewayFlags(fs, args, noOperands(fs))
	if err != nil {
		return err
	}
	st, err := c.Status(context.Background())
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(out, st)
	}
	printStatus(out, st)
	return nil
}

// printStatus prints st for a person. The pending changes, the reload
// error and the restored policy's note quote the config file, which a run
// may have written: they are escaped.
func printStatus(out io.Writer, st *api.Status) {
	fmt.Fprintf(out, "gateway   pid %d, boot id %s, started %s\n", st.PID, st.BootID, st.Started)
	fmt.Fprintf(out, "socket    %s\n", st.Socket)
	switch {
	case st.Vault.NoPassword:
		// There is no vault at the path to show.
		fmt.Fprintf(out, "vault     %s (epoch %d) %s\n", st.Vault.State, st.Vault.Epoch, noPasswordLock)
	case st.Vault.State == api.VaultNone:
		fmt.Fprintf(out, "vault     none: keys added with ssh-add only (\"postern vault init\" makes one at %s)\n", st.Vault.Path)
	default:
		fmt.Fprintf(out, "vault     %s (epoch %d) %s\n", st.Vault.State, st.Vault.Epoch, st.Vault.Path)
	}
	if st.Vault.EpochError != "" {
		fmt.Fprintf(out, "          epoch file: %s\n", safetext.Field(st.Vault.EpochError, safetext.Line))
	}
	fmt.Fprintf(out, "config    %s\n", configDetail(st.Config.Path, st.Config.Approval, onDefaults(st.Config)))
	for _, c := range st.Config.Pending {
		fmt.Fprintf(out, "          waiting for approval (postern approve), the stricter policy in force: %s\n", safetext.Field(c, safetext.Line))
	}
	if st.Config.Restored != "" {
		fmt.Fprintf(out, "          %s\n", safetext.Field(st.Config.Restored, safetext.Line))
	}
	if st.Askpass.Error != "" {
		fmt.Fprintf(out, "askpass   off: %s\n", safetext.Field(st.Askpass.Error, safetext.Line))
	} else if st.Askpass.Path != "" {
		fmt.Fprintf(out, "askpass   %s (sha256 %.12s, pinned at start)\n", st.Askpass.Path, st.Askpass.SHA256)
	}
	if st.Config.Error != "" {
		fmt.Fprintf(out, "          last reload failed, previous policy in force: %s\n", safetext.Field(st.Config.Error, safetext.Line))
	}
	switch {
	case st.Audit.Enabled:
		fmt.Fprintf(out, "audit     %s (%s)\n", st.Audit.Path, plural(int(st.Audit.Records), "record"))
		if st.Audit.Failing != "" {
			fmt.Fprintf(out, "          FAILING since %s: %s\n", st.Audit.FailingSince, safetext.Field(st.Audit.Failing, safetext.Line))
			fmt.Fprintf(out, "          every action is refused until the log can be written (%d so far); the gateway retries it\n", st.Audit.Refused)
		}
		if st.Audit.Anchor != "" {
			fmt.Fprintf(out, "          anchor: %s\n", st.Audit.Anchor)
		}
		if x := st.Audit.Syslog; x != nil {
			fmt.Fprintf(out, "          syslog %s: %d sent, %d dropped", safetext.Field(x.Address, safetext.Line), x.Sent, x.Dropped)
			if x.Error != "" {
				fmt.Fprintf(out, " (%s)", safetext.Terminal(x.Error))
			}
			fmt.Fprintln(out)
		}
	case st.Audit.SetUp:
		fmt.Fprintln(out, "audit     set up after this gateway started: restart it to start the log")
	default:
		fmt.Fprintln(out, "audit     off (postern vault init sets up the audit log)")
	}
	fmt.Fprintf(out, "hosts     %s (%s)\n", st.Hosts.Path, plural(st.Hosts.Count, "host"))
	if st.Hosts.Error != "" {
		fmt.Fprintf(out, "          not read, so no host has a name: %s\n", safetext.Field(st.Hosts.Error, safetext.Line))
	}
	if st.Hosts.Restored != "" {
		fmt.Fprintf(out, "          %s\n", safetext.Field(st.Hosts.Restored, safetext.Line))
	}
	if b := st.Bastion; b != nil {
		if b.Refusing == "" {
			fmt.Fprintf(out, "bastion   serving; journal %s\n", b.Journal)
		} else {
			fmt.Fprintf(out, "bastion   REFUSING commands since %s: %s\n", b.Since, safetext.Field(b.Refusing, safetext.Line))
			if b.Damaged {
				fmt.Fprintln(out, "          the damaged journal is kept as it is; \"postern journal new\" keeps it aside and starts a new one")
			}
		}
	}
	if u := st.Upstream; u != nil {
		fmt.Fprintf(out, "upstream  %s\n", safetext.Field(u.Socket, safetext.Line))
		if u.Stopped {
			fmt.Fprintln(out, "          not used: not the upstream agent the approved configuration names; restart the gateway to use that one")
		}
	}
	fmt.Fprintf(out, "counts    %s, %s, %s, %s\n", plural(st.Counts.Keys, "key"), plural(st.Counts.Runs, "run"), plural(st.Counts.Grants, "grant"), plural(st.Counts.Cards, "pending card"))
	printApprovers(out, st.Approvers)
	if !st.LastNoApprover.IsZero() {
		fmt.Fprintf(out, "          last refused for want of an approver (no_approver) at %s\n", st.LastNoApprover.Local().Format(timeLayout))
	}
}

// printApprovers says where cards will appear.
func printApprovers(out io.Writer, as []api.Approver) {
	any := false
	for i, a := range as {
		head := "approvers"
		if i > 0 {
			head = ""
		}
		state := "no"
		if a.Reachable {
			state, any = "yes", true
		}
		fmt.Fprintf(out, "%-9s %-13s %-3s %s\n", head, a.Name, state, safetext.Field(a.Detail, safetext.Line))
	}
	if !any {
		fmt.Fprintln(out, `          none: a request that needs a card is refused at once (no_approver); run "postern approve" in another terminal`)
	}
}

// noPasswordLock says what holds a gateway without a vault locked.
const noPasswordLock = `by postern lock, with no vault and no password: "postern unlock" lifts it`
