// Package askpass runs the user's SSH_ASKPASS program the way OpenSSH
// does, to confirm a use of a key, to read a word typed out, or to read a
// passphrase.
//
// The program is $SSH_ASKPASS, run with the prompt as its only argument.
// It is used only when a display is available ($DISPLAY or
// $WAYLAND_DISPLAY), unless $SSH_ASKPASS_REQUIRE is "force"; "never"
// disables it. For a confirmation SSH_ASKPASS_PROMPT=confirm is set in the
// program's environment (never in ours), and the answer is yes only when
// the program exits 0 and prints nothing or "yes". Anything else — no
// program, no display, a non-zero exit, a timeout — is no: confirmation
// fails closed. A word and a passphrase are asked without
// SSH_ASKPASS_PROMPT, as OpenSSH asks a passphrase, and read from the
// program's output.
package askpass

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/postern/postern/internal/envlist"
	"github.com/postern/postern/internal/harden"
	"github.com/postern/postern/internal/heldsig"
	"github.com/postern/postern/internal/hugepages"
)

// ErrUnavailable reports that no askpass program can be used here; the
// error returned says why (errors.Is matches it).
var ErrUnavailable = errors.New("no askpass program available")

// unavailable is ErrUnavailable with why.
type unavailable string

func (u unavailable) Error() string        { return ErrUnavailable.Error() + ": " + string(u) }
func (u unavailable) Is(target error) bool { return target == ErrUnavailable }

// Env is the environment askpass programs are judged and run with. The
// gateway captures its own at start, as ssh-agent does.
type Env []string

// FromProcess returns the current process environment.
func FromProcess() Env { return Env(os.Environ()) }

func (e Env) get(k string) string { return envlist.Get(e, k) }

// Program returns the askpass program to run, or ErrUnavailable.
func (e Env) Program() (string, error) {
	prog := e.get("SSH_ASKPASS")
	switch e.get("SSH_ASKPASS_REQUIRE") {
	case "never":
		return "", unavailable("SSH_ASKPASS_REQUIRE=never")
	case "force":
	default:
		if prog != "" && e.get("DISPLAY") == "" && e.get("WAYLAND_DISPLAY") == "" {
			return "", unavailable("no display ($DISPLAY and $WAYLAND_DISPLAY are unset; SSH_ASKPASS_REQUIRE=force asks without one)")
		}
	}
	if prog == "" {
		return "", unavailable("$SSH_ASKPASS is not set")
	}
	return prog, nil
}

// Available reports whether a program can be used here (see Program).
func (e Env) Available() error {
	_, err := e.Program()
	return err
}

// run runs the program e names.
func (e Env) run(ctx context.Context, prompt, mode string) ([]byte, error) {
	prog, err := e.Program()
	if err != nil {
		return nil, err
	}
	if err := e.displayUp(); err != nil {
		return nil, err
	}
	return e.start(ctx, program{path: prog}, prompt, mode)
}

// A program to run: its path, and the image to run in its place when
// there is one (a sealed copy of the file that was checked, see
// Pinned), so that what runs is what was checked, whatever is at the
// path by then.
type program struct {
	path  string
	image *os.File
}

// imageFD is the descriptor the image has in the program's process.
const imageFD = 3

func (e Env) start(ctx context.Context, prog program, prompt, mode string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, prog.path, prompt)
	if prog.image != nil {
		// The program sees its own path as its name; a script's
		// interpreter reads the script from the descriptor.
		cmd.Path = fmt.Sprintf("/proc/self/fd/%d", imageFD)
		cmd.ExtraFiles = []*os.File{prog.image}
	}
	// The program gets the environment e but SSH_ASKPASS_PROMPT, which
	// is set for it here, and the variables that name libraries for its
	// loader: a library LD_PRELOAD named where the gateway started would
	// run in the program that answers cards, and could be rewritten
	// after the program was pinned.
	env := make([]string, 0, len(e)+1)
	for _, kv := range e {
		k, _, _ := strings.Cut(kv, "=")
		if k != "SSH_ASKPASS_PROMPT" && !slices.Contains(harden.LoaderVariables, k) {
			env = append(env, kv)
		}
	}
	if mode != "" {
		env = append(env, "SSH_ASKPASS_PROMPT="+mode)
	}
	cmd.Env = env
	out := &boundedBuffer{}
	cmd.Stdout = out
	cmd.Stdin = nil
	// A program that leaves children holding its output must not keep
	// the question open after it was cancelled; nor its dialog on the
	// screen, when it runs it as a child (a zenity script): it runs in a
	// process group of its own, killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	// The person's program, with the signal mask and the huge pages it
	// would have had.
	heldsig.Release(cmd)
	restore := hugepages.Allow()
	err := cmd.Start()
	restore()
	if err == nil {
		err = cmd.Wait()
	}
	if ctx.Err() == nil && out.over {
		// Whatever its exit: the program may have ended on its closed
		// output, which is no "no" a person gave.
		err = errTooMuch
	}
	if err != nil {
		clear(out.Bytes())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("askpass %s: %w", prog.path, err)
	}
	return out.Bytes(), nil
}

// maxOutput bounds what an askpass program's answer is read of: a line,
// a word or a passphrase (OpenSSH reads 1023 bytes of it). A program
// that prints more gives no answer, and the gateway holds no more of it.
const maxOutput = 64 << 10

var errTooMuch = fmt.Errorf("printed more than %d bytes, which is no answer", maxOutput)

// A boundedBuffer keeps up to maxOutput bytes; a write past them fails,
// which closes the program's output pipe. It is only a Writer (a
// bytes.Buffer's ReadFrom would read past the bound).
type boundedBuffer struct {
	buf  bytes.Buffer
	over bool // a write went past the bound
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.over || b.buf.Len()+len(p) > maxOutput {
		b.over = true
		clear(b.buf.Bytes())
		b.buf.Reset()
		return 0, errTooMuch
	}
	return b.buf.Write(p)
}

func (b *boundedBuffer) Bytes() []byte { return b.buf.Bytes() }

// A runner runs an askpass program with prompt, SSH_ASKPASS_PROMPT set
// to mode (unless empty), and returns what it printed.
type runner func(ctx context.Context, prompt, mode string) ([]byte, error)

// ask runs the program. A non-zero exit is an answer, no (or the dialog
// cancelled): ok is false and err nil.
func (run runner) ask(ctx context.Context, prompt, mode string) (out []byte, ok bool, err error) {
	out, err = run(ctx, prompt, mode)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return out, true, nil
}

func (run runner) confirm(ctx context.Context, prompt string) (bool, error) {
	out, ok, err := run.ask(ctx, prompt, "confirm")
	if !ok {
		return false, err
	}
	ans := strings.TrimSpace(string(out))
	return ans == "" || strings.EqualFold(ans, "yes"), nil
}

func (run runner) word(ctx context.Context, prompt string) (string, error) {
	out, _, err := run.ask(ctx, prompt, "")
	return strings.TrimRight(string(out), "\r\n"), err
}

func (run runner) passphrase(ctx context.Context, prompt string) ([]byte, error) {
	out, err := run(ctx, prompt, "")
	if err != nil {
		return nil, err
	}
	defer clear(out)
	p := bytes.TrimRight(out, "\r\n")
	if len(p) == 0 {
		return nil, errors.New("askpass returned an empty passphrase")
	}
	return bytes.Clone(p), nil
}

// Confirm shows prompt and reports whether the user said yes. An error
// means the question could not be asked; it is never a yes.
func (e Env) Confirm(ctx context.Context, prompt string) (bool, error) {
	return runner(e.run).confirm(ctx, prompt)
}

// Word shows prompt and returns the line the person typed, "" when the
// program exited non-zero (the dialog was cancelled). An error means the
// question could not be asked.
func (e Env) Word(ctx context.Context, prompt string) (string, error) {
	return runner(e.run).word(ctx, prompt)
}

// Passphrase asks for a secret. The caller must clear the returned slice.
func (e Env) Passphrase(ctx context.Context, prompt string) ([]byte, error) {
	return runner(e.run).passphrase(ctx, prompt)
}
