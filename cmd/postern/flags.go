package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/postern/postern/gateway/api"
)

// newFlags returns a flag set that reports usage errors instead of
// exiting, with usage text u.
func newFlags(name, u string, errw io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errw)
	fs.Usage = func() { fmt.Fprint(errw, u) }
	return fs
}

// parse parses args and turns flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{exitUsage}
	}
	return nil
}

// gatewayFlags adds --socket to fs, parses args and returns a client of
// the gateway the command talks to.
func gatewayFlags(fs *flag.FlagSet, args []string) (*api.Client, error) {
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	return gatewayClient(*sock)
}

// socketFlag adds --socket to fs.
func socketFlag(fs *flag.FlagSet) *string {
	return fs.String("socket", "", "agent socket of the gateway (default $SSH_AUTH_SOCK)")
}

// gatewayClient returns a client of the gateway serving the agent socket
// sock, or $SSH_AUTH_SOCK.
func gatewayClient(sock string) (*api.Client, error) {
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock == "" {
		return nil, fmt.Errorf("%w: $SSH_AUTH_SOCK is not set", api.ErrNoGateway)
	}
	return api.NewClient(sock), nil
}

// leadingOperand splits off an operand written before the flags
// ("postern approve ID --session").
func leadingOperand(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}
