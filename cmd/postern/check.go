package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/safetext"
	"github.com/postern/postern/internal/smallfile"
)

const checkUsage = `Usage: postern check [--host NAME]... [--key KEY] [--exe PROGRAM]... [--forwarded] [--json] [--socket PATH]

Dry-run the running gateway's policy: say which approval a request would
need, and why ("per-call, because rule 2: host "prod-*""). --host names
the destination as its verified host key's names would (repeat for each
name); --key is a fingerprint or the comment of a key the agent holds;
--exe names the requesting chain's programs, requester first and, for a
request through a run's own socket, the run last: exe rules match those
two, never another process of the chain (a name is looked up in $PATH).
Nothing is signed or recorded.
`

// strings is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdCheck(args []string, out, errw io.Writer) error {
	fs := newFlags("check", checkUsage)
	var hosts, exes stringList
	fs.Var(&hosts, "host", "a name of the destination (repeatable)")
	fs.Var(&exes, "exe", "a program of the requesting chain, requester first, the run last (repeatable)")
	key := fs.String("key", "", "the key: a fingerprint or a comment")
	fwd := fs.Bool("forwarded", false, "the request comes through a forwarded agent connection")
	asJSON := fs.Bool("json", false, "print JSON")
	var a api.CheckArgs
	c, err := gatewayFlags(fs, args, func() error {
		if err := noOperands(fs)(); err != nil {
			return err
		}
		for _, e := range exes {
			x, err := checkExe(e)
			if err != nil {
				return err
			}
			a.Exes = append(a.Exes, x)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.Hosts, a.Key, a.Forwarded = hosts, *key, *fwd
	res, err := c.Check(context.Background(), a)
	if err != nil {
		return err
	}
	if res.ConfigError != "" {
		warningf(errw, "the configuration file was not put in force (%s): the answer is by the policy in force before it", safetext.Field(res.ConfigError, safetext.Line))
	}
	if *asJSON {
		return printJSON(out, res)
	}
	fmt.Fprintf(out, "%s, because %s\n", res.Mode, res.Because)
	switch {
	case *key != "" && !res.KeyHeld && res.Locked:
		warningf(errw, "the agent is locked and lists no key: rules on keys matched against %q as given, not against the key it names (run \"postern unlock\", then check again)", *key)
	case *key != "" && !res.KeyHeld:
		warningf(errw, "the agent holds no key %q: rules on keys matched against the name as given", *key)
	case res.Locked:
		warningf(errw, "the agent is locked: no key signs until \"postern unlock\"; this is the answer once it is unlocked")
	}
	return nil
}

// checkExe resolves a program as a shell would and hashes it, for rules
// on executable hashes.
func checkExe(name string) (api.CheckExe, error) {
	p, err := lookProgram(name)
	if err != nil {
		// A program that is not there is a mistake on the command line.
		return api.CheckExe{}, usagef("check: --exe %v", err)
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	f, _, err := smallfile.Open(p)
	if err != nil {
		return api.CheckExe{}, fmt.Errorf("--exe %s: %w", name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return api.CheckExe{}, fmt.Errorf("--exe %s: %w", name, err)
	}
	return api.CheckExe{Path: p, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// lookProgram finds a program as a shell would. Its error names the
// program, quoted, and says why there is none in words: no such program
// in $PATH, no such file, not an executable file.
func lookProgram(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	q := safetext.Quote(name, safetext.Path)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("%s: no such program in $PATH", q)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: no such file", q)
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("%s: not an executable file", q)
	}
	return "", fmt.Errorf("%s: %v", q, errors.Unwrap(err))
}
