package askpass

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"sync"

	"github.com/postern/postern/internal/procid"
)

// A Pinned askpass program is the one found at gateway start, by path and
// SHA-256. Before each use the file is hashed again: once it differs (or
// is gone), every later question is refused, and Err says why. A run
// that rewrote the program could otherwise answer yes through it.
type Pinned struct {
	env  Env
	path string // absolute; "" when no program is available
	sum  [32]byte

	mu       sync.Mutex
	err      error // set once the program changed
	onChange func(error)
}

// Pin resolves and hashes env's askpass program. Without one, the Pinned
// asks nothing (as Env would). onChange, if set, is called once when the
// program is found changed.
func Pin(env Env, onChange func(error)) *Pinned {
	p := &Pinned{env: env, onChange: onChange}
	prog, err := env.Program()
	if err != nil {
		return p
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		return p
	}
	sum, err := procid.HashFile(path)
	if err != nil {
		p.err = fmt.Errorf("askpass program %s: %w", path, err)
		return p
	}
	p.path, p.sum = path, sum
	return p
}

// ErrChanged reports that the askpass program is no longer the one pinned.
var ErrChanged = errors.New("the askpass program changed since the gateway started; askpass approvals are off until it restarts")

// Status returns the pinned program's path and hash, and why askpass
// approvals are off ("" while they are on).
func (p *Pinned) Status() (path, hash, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path != "" {
		path, hash = p.path, hex.EncodeToString(p.sum[:])
	}
	if p.err != nil {
		why = p.err.Error()
	}
	return path, hash, why
}

// check hashes the program again.
func (p *Pinned) check() error {
	if err := p.Available(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil { // found changed meanwhile
		return p.err
	}
	if sum, err := procid.HashFile(p.path); err != nil || sum != p.sum {
		p.err = fmt.Errorf("%w (%s)", ErrChanged, p.path)
		if p.onChange != nil {
			p.onChange(p.err)
		}
		return p.err
	}
	return nil
}

// Available reports whether askpass questions can be asked: a program
// was pinned and has not changed since (ErrUnavailable, or why not).
func (p *Pinned) Available() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.path == "" {
		return ErrUnavailable
	}
	return nil
}

// env returns the environment with the pinned path as SSH_ASKPASS.
func (p *Pinned) pinnedEnv() Env {
	return append(append(Env(nil), p.env...), "SSH_ASKPASS="+p.path)
}

// Confirm asks, through the pinned program only.
func (p *Pinned) Confirm(ctx context.Context, prompt string) (bool, error) {
	if err := p.check(); err != nil {
		return false, err
	}
	return p.pinnedEnv().Confirm(ctx, prompt)
}

// Word asks for a word typed out, through the pinned program only.
func (p *Pinned) Word(ctx context.Context, prompt string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	return p.pinnedEnv().Word(ctx, prompt)
}

// Passphrase asks for a secret, through the pinned program only.
func (p *Pinned) Passphrase(ctx context.Context, prompt string) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.pinnedEnv().Passphrase(ctx, prompt)
}
