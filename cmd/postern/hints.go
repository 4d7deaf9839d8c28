package main

import (
	"errors"

	"github.com/postern/postern/gateway/api"
)

// hintFor returns the advice printed after an error ("postern: hint: …"):
// which command or flag to use next. Libraries say what failed; naming
// the command that helps is the command line's job, and happens here.
func hintFor(err error) string {
	switch {
	case errors.Is(err, api.ErrNoGateway):
		return `start the gateway with "postern agent", and check $SSH_AUTH_SOCK or --socket`
	case errors.Is(err, api.ErrNoAuditLog):
		return `"postern vault init" sets one up`
	case errors.Is(err, api.ErrNoBastionSocket):
		return "pass --socket"
	case api.HasCode(err, api.CodeStaleKey):
		return "unlock with the passphrase and --remember"
	}
	return ""
}
