package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/sshagent"
)

// ExtWhy is the agent protocol extension "postern why" asks through. It
// goes over the agent socket, not the control socket, so that it works
// from inside a confined run, which sees only its own agent socket.
const ExtWhy = sshagent.ExtWhy

// Why is one decision as "postern why" reports it.
type Why = approvals.Why

// WhyResult answers ExtWhy: the last decision for the caller (nil when
// the gateway remembers none), and the run the caller's socket belongs
// to, if it is a run's. AuditFailing says why the audit log cannot be
// written, since AuditFailingSince (RFC 3339): every action is refused
// meanwhile.
type WhyResult struct {
	Last              *Why   `json:"last,omitempty"`
	Run               string `json:"run,omitempty"`
	VaultLocked       bool   `json:"vault_locked"`
	AuditFailing      string `json:"audit_failing,omitempty"`
	AuditFailingSince string `json:"audit_failing_since,omitempty"`
	BootID            string `json:"boot_id"`
}

// ErrNotPostern is returned by AskWhy when the agent at the socket does
// not answer the extension: it is not postern (or an older one).
var ErrNotPostern = errors.New("the agent at $SSH_AUTH_SOCK does not answer postern's why@postern extension: it is not postern")

// ErrWhyRefused is the gateway's refusal to answer a client that came
// through ssh: a host the agent is forwarded to (ssh -A) is not told
// what the gateway decided for the person's programs.
var ErrWhyRefused = errors.New("the agent does not answer why@postern through ssh (a forwarded agent): only a client on the gateway's own machine is told")

// AskWhy asks the gateway serving agentSocket (its main socket or a
// run's) what it last decided for the calling process or its run.
func AskWhy(ctx context.Context, agentSocket string) (*WhyResult, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", agentSocket)
	if err != nil {
		return nil, fmt.Errorf("%w at %s (%v)", ErrNoGateway, agentSocket, errors.Unwrap(err))
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	buf, err := sshagent.AskExtension(conn, ExtWhy, dl)
	switch {
	case errors.Is(err, sshagent.ErrExtensionUnknown):
		return nil, ErrNotPostern
	case errors.Is(err, sshagent.ErrExtensionRefused):
		return nil, ErrWhyRefused
	case err != nil:
		return nil, fmt.Errorf("asking the agent why: %w", err)
	}
	var m struct {
		Type       byte
		Name, Body string
	}
	if err := ssh.Unmarshal(buf, &m); err != nil || m.Name != ExtWhy {
		return nil, fmt.Errorf("malformed why@postern answer from the agent")
	}
	var res WhyResult
	if err := json.Unmarshal([]byte(m.Body), &res); err != nil {
		return nil, fmt.Errorf("malformed why@postern answer from the agent: %w", err)
	}
	return &res, nil
}
