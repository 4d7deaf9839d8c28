package askpass

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// A Pinned askpass program is the one found at gateway start, by path and
// SHA-256. Before each use the file is copied and the copy hashed again,
// and the copy runs, never the path (on Linux a sealed memfd, which no
// one can change; elsewhere the path, right after the check). Once the
// file differs (or is gone, or is no regular file), every later question
// is refused, and Err says why. A run that rewrote the program could
// otherwise answer yes through it, and one that swapped it between the
// check and the run would have its own program asked.
type Pinned struct {
	env  Env
	path string // absolute; "" when no program is available
	sum  [32]byte

	// none says why no program was pinned (ErrUnavailable and why).
	none error

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
		p.none = err
		return p
	}
	path, err := exec.LookPath(prog)
	if err != nil {
		// Said apart from the program changing (err): it was never
		// there, and nothing was pinned.
		p.none = unavailable(fmt.Sprintf("$SSH_ASKPASS names %s: %v", prog, errors.Unwrap(err)))
		return p
	}
	// A relative name with a slash is found from the gateway's working
	// directory: pinned, and shown, as the absolute path it is.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f, sum, err := readProgram(path, nil)
	if err != nil {
		p.err = fmt.Errorf("askpass program %s: %w", path, err)
		return p
	}
	f.Close()
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

// beforeRun runs between the check of the program and its run (tests
// change the file there).
var beforeRun = func() {}

// run checks the program against the pin and runs what was checked.
func (p *Pinned) run(ctx context.Context, prompt, mode string) ([]byte, error) {
	if err := p.Available(); err != nil {
		return nil, err
	}
	img, err := p.image()
	if err != nil {
		return nil, err
	}
	if img != nil {
		defer img.Close()
	}
	beforeRun()
	return p.env.start(ctx, program{path: p.path, image: img}, prompt, mode)
}

// image reads the program, checks it against the pin, and returns what
// to run: a sealed copy (see newImage); where no copy may be executed,
// the file as it was opened and read, run by its descriptor; nil where
// programs run by their path.
func (p *Pinned) image() (*os.File, error) {
	cp, err := newImage()
	asOpened := errors.Is(err, errImageNotExecutable)
	if err != nil && !asOpened {
		return nil, fmt.Errorf("askpass: %w", err)
	}
	f, sum, err := readProgram(p.path, cp)
	if err := p.changed(err, sum); err != nil {
		f.Close()  // nil after a read error (Close of a nil *os.File does nothing)
		cp.Close() // nil without a copy
		return nil, err
	}
	if asOpened {
		return f, nil
	}
	f.Close()
	if cp == nil {
		return nil, nil // run by the path
	}
	img, err := sealImage(cp)
	if err != nil {
		return nil, fmt.Errorf("askpass: %w", err)
	}
	return img, nil
}

// changed turns askpass questions off for good when the program read
// (sum, or the error reading it) is not the one pinned.
func (p *Pinned) changed(err error, sum [32]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil { // found changed meanwhile
		return p.err
	}
	if err != nil || sum != p.sum {
		p.err = fmt.Errorf("%w (%s)", ErrChanged, p.path)
		if err != nil {
			p.err = fmt.Errorf("%w: %w", p.err, err)
		}
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
	err := p.err
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if p.path == "" {
		return p.none
	}
	return p.env.displayUp()
}

// Confirm asks, through the pinned program only.
func (p *Pinned) Confirm(ctx context.Context, prompt string) (bool, error) {
	return runner(p.run).confirm(ctx, prompt)
}

// Word asks for a word typed out, through the pinned program only.
func (p *Pinned) Word(ctx context.Context, prompt string) (string, error) {
	return runner(p.run).word(ctx, prompt)
}

// Passphrase asks for a secret, through the pinned program only.
func (p *Pinned) Passphrase(ctx context.Context, prompt string) ([]byte, error) {
	return runner(p.run).passphrase(ctx, prompt)
}
