package approvals

import (
	"strings"

	"github.com/postern/postern/internal/safetext"
)

// relayLine is the card's line for what a bastion request runs on the
// host, or "". Its label comes from the kind of the session's request,
// which the bastion read, so a command line cannot pass for a shell or a
// subsystem: an exec of "(interactive shell)" reads as that command. A
// shell's commands are not known when it is approved, and the line says
// where they will come from.
func (v *CardView) relayLine() string {
	switch v.Relay {
	case RelayExec:
		return "Command (relayed by the bastion, exactly): " + safetext.Field(v.Command, safetext.Command)
	case RelaySubsystem:
		return "Subsystem (relayed by the bastion, exactly): " + safetext.Field(v.Command, safetext.Command)
	case RelayProbe:
		// The probe is postern's own script, longer than a card shows:
		// the card says what it does, whole.
		return "Probe (sent by the bastion for postern journal resolve): reads the remote markers of journal entry " + safetext.Field(v.ProbeOf, safetext.Name) + ", and fences its run if it never started, so that it can no longer start; it runs nothing else"
	case RelayShell:
		if v.Terminal {
			return "Shell (relayed by the bastion): a login shell with a terminal; the commands typed into it are not known now"
		}
		return "Shell (relayed by the bastion): a login shell with no terminal, running whatever the client sends on its input; those commands are not known now"
	}
	return ""
}

// loginLine says, for a bastion request, the account the bastion logs in
// as: the name it sends the host, whole (a name cut would read like
// another), and, for a name with a colon, the account OpenSSH's sshd
// logs in, which reads what follows the first colon as a login style.
func (v *CardView) loginLine() string {
	if v.Relay == RelayNone || v.Destination == nil || v.Destination.User == "" {
		return ""
	}
	u := v.Destination.User
	l := "Login (by the bastion, exactly): user " + safetext.Quote(u, 0)
	if account, _, styled := strings.Cut(u, ":"); styled {
		l += ", which sshd logs in as " + safetext.Quote(account, 0) + " (what follows the colon is a login style)"
	}
	return l
}
