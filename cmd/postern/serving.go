package main

import (
	"errors"
	"os"

	"github.com/postern/postern/gateway/api"
)

// servingGateway returns a client of the gateway at $SSH_AUTH_SOCK, else
// at the well-known socket, for a command that can do without one (it
// reads the files itself, with the passphrase); nil when none answers.
func servingGateway() *api.Client {
	wk, _ := api.WellKnownSocket()
	for _, sock := range []string{os.Getenv("SSH_AUTH_SOCK"), wk} {
		if sock != "" && api.Serves(sock) {
			return api.NewClient(sock)
		}
	}
	return nil
}

// cannotServe reports whether err says that the gateway cannot do what
// it was asked in the command's place (it is gone, its vault is locked,
// it keeps other files, it refuses the caller, or it is older than the
// command), so that the command does it itself.
func cannotServe(err error) bool {
	return errors.Is(err, api.ErrNoGateway) || api.HasCode(err, api.CodeLocked) || api.HasCode(err, api.CodeNotFound) ||
		api.HasCode(err, api.CodeDenied) || api.HasCode(err, api.CodeUsage)
}

// hintLocked gives err, when no one could be asked for a passphrase, a
// hint that names the other way on where the gateway could not serve
// only because its vault is locked (gwErr): unlocking it.
func hintLocked(err, gwErr error) error {
	if !api.HasCode(gwErr, api.CodeLocked) {
		return err
	}
	return hintCannotAsk(err, `the running gateway reads it once unlocked ("postern unlock"); or use --passphrase-file or $`+envPassphraseFile)
}
