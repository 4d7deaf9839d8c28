package askpass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"

	"github.com/postern/postern/internal/smallfile"
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
	sum, err := copyProgram(path, io.Discard)
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

// maxProgram bounds the askpass program's size.
const maxProgram = 256 << 20

// copyProgram copies the regular file at path to w and returns the
// SHA-256 of what it copied.
func copyProgram(path string, w io.Writer) (sum [32]byte, err error) {
	f, fi, err := smallfile.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	if fi.Size() > maxProgram {
		return sum, fmt.Errorf("%w: %d bytes", smallfile.ErrTooLarge, fi.Size())
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), io.LimitReader(f, maxProgram+1))
	if err != nil {
		return sum, err
	}
	if n > maxProgram {
		return sum, fmt.Errorf("%w: more than %d bytes", smallfile.ErrTooLarge, maxProgram)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// beforeRun runs between the check of the program and its run (tests
// change the file there).
var beforeRun = func() {}

// run copies the program into an image, checks the copy against the pin,
// and runs the image.
func (p *Pinned) run(ctx context.Context, prompt, mode string) ([]byte, error) {
	if err := p.Available(); err != nil {
		return nil, err
	}
	img, err := newImage()
	if err != nil {
		return nil, fmt.Errorf("askpass: %w", err)
	}
	var sum [32]byte
	if img == nil {
		sum, err = copyProgram(p.path, io.Discard)
	} else if sum, err = copyProgram(p.path, img); err == nil {
		img, err = sealImage(img)
	}
	if img != nil {
		defer img.Close()
	}
	if err := p.changed(err, sum); err != nil {
		return nil, err
	}
	beforeRun()
	return p.env.start(ctx, program{path: p.path, image: img}, prompt, mode)
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
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.path == "" {
		return ErrUnavailable
	}
	return nil
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
