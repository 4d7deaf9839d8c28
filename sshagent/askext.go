package sshagent

// The client's side of an extension request, for the commands that ask
// the gateway through its agent socket (postern why): x/crypto's client
// tells an agent that refused a request apart from no other failure.

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// ErrExtensionUnknown is an agent's SSH_AGENT_FAILURE to an extension
// request: it does not know the extension.
var ErrExtensionUnknown = errors.New("the agent does not know the extension")

// ErrExtensionRefused is an agent's SSH_AGENT_EXTENSION_FAILURE: it
// knows the extension and refused the request.
var ErrExtensionRefused = errors.New("the agent refused the extension request")

// AskExtension sends the extension request name, without contents, on
// c and returns the agent's SSH_AGENT_EXTENSION_RESPONSE (its type
// first), waiting until deadline (zero: as long as it takes).
func AskExtension(c net.Conn, name string, deadline time.Time) ([]byte, error) {
	f := newFramed(c)
	if err := f.sendBy(append([]byte{msgExtension}, ssh.Marshal(extensionMsg{Name: name})...), deadline); err != nil {
		return nil, err
	}
	reply, err := f.recv(deadline)
	if err != nil {
		return nil, err
	}
	switch reply[0] {
	case msgExtensionResponse:
		return reply, nil
	case msgFailure:
		return nil, ErrExtensionUnknown
	case msgExtensionFailure:
		return nil, ErrExtensionRefused
	}
	return nil, fmt.Errorf("an answer of type %d to an extension request", reply[0])
}
