package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/postern/postern/gateway/api"
)

// newFlags returns a flag set named after its command ("vault add")
// whose mistakes become usage errors (see parse), with usage text u for
// --help.
func newFlags(name, u string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(fs.Output(), u) }
	if flagSetMade != nil {
		flagSetMade(fs)
	}
	return fs
}

// flagSetMade, when a test sets it, is given each flag set newFlags
// makes: the flags a command line takes.
var flagSetMade func(*flag.FlagSet)

// parse parses args, whose flags may come before, between or after the
// operands ("postern vault add KEY --passphrase-file F"), as GNU getopt
// takes them; after "--" everything is an operand. fs.Args() then holds
// the operands in their order. --help (-h) becomes a request for the
// usage text; an unknown flag, a missing or bad value becomes a usage
// error in the command line's own words, never the flag package's raw
// message.
func parse(fs *flag.FlagSet, args []string) error {
	var operands []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); len(rest) == 0 || (used > 0 && args[used-1] == "--") {
			operands = append(operands, rest...)
			break
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, operands...))
}

// parseCommand parses args whose flags come before the first operand:
// the operands are a command line of their own ("postern run claude
// --model M"), whose flags are its own.
func parseCommand(fs *flag.FlagSet, args []string) error { return parseFlags(fs, args) }

// parseFlags parses args up to the first operand (or "--"), with parse's
// errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		var b strings.Builder
		fs.SetOutput(&b)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return &helpRequest{b.String()}
	}
	return usagef("%s: %s", fs.Name(), flagMistake(err))
}

// flagMistake words an error of the flag package, naming a long flag as
// the usage texts and the man pages spell it ("--limit", not "-limit").
func flagMistake(err error) string {
	msg := longFlag.ReplaceAllString(err.Error(), "$1--$2")
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag " + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "flag " + name + " needs a value"
	}
	return msg
}

// longFlag is a long flag as the flag package names it: "-limit".
var longFlag = regexp.MustCompile(`(^|\s)-([A-Za-z][A-Za-z0-9-]+)`)

// gatewayFlags adds --socket to fs, parses args (parse), runs check (for
// usage errors, which come before any talk with the gateway) and returns
// a client of the gateway the command talks to.
func gatewayFlags(fs *flag.FlagSet, args []string, check func() error) (*api.Client, error) {
	return gatewayFlagsWith(parse, fs, args, check)
}

// gatewayFlagsWith is gatewayFlags, with args parsed by parse.
func gatewayFlagsWith(parse func(*flag.FlagSet, []string) error, fs *flag.FlagSet, args []string, check func() error) (*api.Client, error) {
	sock := socketFlag(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return gatewayClient(*sock)
}

// socketFlag adds --socket to fs.
func socketFlag(fs *flag.FlagSet) *string {
	return fs.String("socket", "", "agent socket of the gateway (default $SSH_AUTH_SOCK)")
}

// gatewayClient returns a client of the gateway serving the agent socket
// sock, or else $SSH_AUTH_SOCK, or else the well-known socket (see
// api.Locate); it warns when it passes over $SSH_AUTH_SOCK.
func gatewayClient(sock string) (*api.Client, error) {
	if sock != "" {
		return api.NewClient(sock), nil
	}
	sock, note, err := api.Locate(os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		return nil, err
	}
	if note != "" {
		warningf(os.Stderr, "%s", note)
	}
	return api.NewClient(sock), nil
}

// answeringGateway returns a client of the gateway at sock (or
// $SSH_AUTH_SOCK) when one answers there, and its status; else nil.
func answeringGateway(sock string) (*api.Client, *api.Status) {
	c, err := gatewayClient(sock)
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return nil, nil
	}
	return c, st
}

// given reports whether flag name was given on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// noOperands refuses operands on a command that takes none.
func noOperands(fs *flag.FlagSet) func() error {
	return func() error {
		if fs.NArg() > 0 {
			return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
		}
		return nil
	}
}

// oneOperand returns the command's one operand, "" when there is none,
// or a usage error when there are more.
func oneOperand(fs *flag.FlagSet) (string, error) {
	if fs.NArg() > 1 {
		return "", usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(1))
	}
	return fs.Arg(0), nil
}

// exclusive refuses flag first given together with any of others.
func exclusive(fs *flag.FlagSet, first string, others ...string) error {
	if !given(fs, first) {
		return nil
	}
	for _, o := range others {
		if given(fs, o) {
			return usagef("%s: --%s and --%s cannot be used together", fs.Name(), first, o)
		}
	}
	return nil
}

// onlyWith refuses each of flags given without flag with.
func onlyWith(fs *flag.FlagSet, with string, flags ...string) error {
	if given(fs, with) {
		return nil
	}
	for _, f := range flags {
		if given(fs, f) {
			return usagef("%s: --%s applies to --%s only", fs.Name(), f, with)
		}
	}
	return nil
}
