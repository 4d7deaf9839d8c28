package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/postern/postern/internal/askpass"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/smallfile"
)

// envPassphraseFile names a file holding the passphrase, like
// --passphrase-file. It is the only way a secret may come from the
// environment: the variable holds a path, never the secret.
const envPassphraseFile = "POSTERN_PASSPHRASE_FILE"

func passphraseFileFlag(fs *flag.FlagSet) *string {
	return fs.String("passphrase-file", "", "read the passphrase from `FILE` (first line)")
}

// readPassphrase reads a passphrase from the file named by the flag or
// $POSTERN_PASSPHRASE_FILE, else from the terminal, else through
// $SSH_ASKPASS. The caller clears the result.
func readPassphrase(file, prompt string) ([]byte, error) {
	return passphraseFrom(file, prompt, askPassphrase)
}

// passphraseFrom reads the passphrase file (the flag's, else the
// environment's) or, without one, asks.
func passphraseFrom(file, prompt string, ask func(string) ([]byte, error)) ([]byte, error) {
	if file == "" {
		file = os.Getenv(envPassphraseFile)
	}
	if file != "" {
		return passphraseFromFile(file)
	}
	return ask(prompt)
}

// holdSecrets makes this process non-dumpable and without core files, as
// the gateway is, before it reads a secret (a passphrase, a private key,
// a vault's data key): no other program of the user may then read its
// memory or its /proc files, or trace it, while it holds the secret.
func holdSecrets() error {
	if err := harden.Apply(); err != nil {
		return fmt.Errorf("cannot keep the secret from other programs (no longer dumpable): %w", err)
	}
	return nil
}

// errCannotAsk: no terminal and no askpass program to ask a person with;
// the error returned says why askpass cannot ask (errors.Is matches it).
var errCannotAsk = errors.New("cannot read a passphrase: no terminal")

// askPassphrase reads from the terminal, else through $SSH_ASKPASS.
func askPassphrase(prompt string) ([]byte, error) {
	if err := holdSecrets(); err != nil {
		return nil, err
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		fmt.Fprint(tty, prompt)
		p, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		if err != nil {
			return nil, fmt.Errorf("reading the passphrase: %w", err)
		}
		if len(p) == 0 {
			return nil, errors.New("empty passphrase")
		}
		return p, nil
	}
	p, err := askpass.FromProcess().Passphrase(context.Background(), prompt)
	if errors.Is(err, askpass.ErrUnavailable) {
		// Said whole: "no askpass program" of a person whose
		// $SSH_ASKPASS is set sends them to look for the wrong thing.
		return nil, withHint(fmt.Errorf("%w, and %w", errCannotAsk, err), "use --passphrase-file or $"+envPassphraseFile)
	}
	return p, err
}

// hintCannotAsk gives err, when no one could be asked for a passphrase,
// the hint instead of askPassphrase's.
func hintCannotAsk(err error, hint string) error {
	if errors.Is(err, errCannotAsk) {
		return withHint(err, hint)
	}
	return err
}

// readNewPassphrase reads a new passphrase like readPassphrase, asking
// twice (askNewPassphrase).
func readNewPassphrase(file, prompt string) ([]byte, error) {
	return passphraseFrom(file, prompt, askNewPassphrase)
}

// askNewPassphrase asks twice, on a terminal or through askpass, as
// ssh-keygen does: a typo in a dialog that hides what is typed would
// otherwise seal the vault to a passphrase no one knows.
func askNewPassphrase(prompt string) ([]byte, error) {
	p, err := askPassphrase(prompt)
	if err != nil {
		return nil, err
	}
	again, err := askPassphrase("Enter the same passphrase again: ")
	if err != nil {
		clear(p)
		return nil, err
	}
	defer clear(again)
	if !bytes.Equal(p, again) {
		clear(p)
		return nil, errors.New("the passphrases do not match")
	}
	return p, nil
}

// maxPassphraseFile bounds a passphrase file: its first line is the
// passphrase.
const maxPassphraseFile = 64 << 10

// passphraseFromFile reads the first line of file, a regular file (a FIFO
// or a device is refused, not waited on or read for ever).
func passphraseFromFile(file string) ([]byte, error) {
	if err := holdSecrets(); err != nil {
		return nil, err
	}
	b, err := smallfile.Read(file, maxPassphraseFile)
	if errors.Is(err, smallfile.ErrTooLarge) {
		return nil, fmt.Errorf("passphrase file %s: larger than %d KiB; the passphrase is its first line", file, maxPassphraseFile>>10)
	}
	if err != nil {
		return nil, fmt.Errorf("passphrase file: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	p := append([]byte(nil), line...)
	clear(b)
	if len(p) == 0 {
		return nil, fmt.Errorf("passphrase file %s: empty first line", file)
	}
	return p, nil
}
