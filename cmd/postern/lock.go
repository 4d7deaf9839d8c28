package main

import (
	"fmt"
	"io"
	"time"

	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/gateway"
)

const lockUsage = `Usage: postern lock [--socket PATH]

Lock the gateway: decrypted keys are wiped and every approval ends.
`

const unlockUsage = `Usage: postern unlock [--passphrase-file FILE] [--socket PATH]

Unlock the gateway's vault. The passphrase is read from FILE (or
$POSTERN_PASSPHRASE_FILE), else from the terminal, else through
$SSH_ASKPASS.
`

func cmdLock(args []string, out, errw io.Writer) error {
	ctl, err := gatewayFlags(newFlags("lock", lockUsage, errw), args)
	if err != nil {
		return err
	}
	var res gateway.LockResult
	if err := control.Call(ctl, "lock", nil, &res, 30*time.Second); err != nil {
		return err
	}
	if res.Already {
		fmt.Fprintln(out, "already locked")
		return nil
	}
	fmt.Fprintln(out, "locked")
	return nil
}

func cmdUnlock(args []string, out, errw io.Writer) error {
	fs := newFlags("unlock", unlockUsage, errw)
	pfile := passphraseFileFlag(fs)
	ctl, err := gatewayFlags(fs, args)
	if err != nil {
		return err
	}
	pass, err := readPassphrase(*pfile, "Enter passphrase for the postern vault: ")
	if err != nil {
		return err
	}
	defer clear(pass)
	var st gateway.Status
	err = control.Call(ctl, "unlock", gateway.UnlockArgs{Passphrase: pass}, nil, 2*time.Minute)
	if err != nil {
		return err
	}
	if err := control.Call(ctl, "status", nil, &st, 10*time.Second); err == nil {
		fmt.Fprintf(out, "unlocked (vault epoch %d, %d keys)\n", st.Vault.Epoch, st.Counts.Keys)
	}
	return nil
}
