package heldsig

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/startagain"
)

// heldVar hands a program of postern's the signals the program that
// started it holds and the person did not block (Hold starting the
// program again, or [ChildEnv] for the daemon a detaching gateway
// starts). Hold removes it from the environment.
const heldVar = "POSTERN_HELD_SIGNALS"

// releaseName is the name postern's own file is started under by
// Release, and releaseVar holds the signals it unblocks before it
// executes the program it was started for.
const (
	releaseName = "postern-release-signals"
	releaseVar  = "POSTERN_RELEASE_SIGNALS"
)

// state is what Hold found: the signals blocked in every thread of the
// process since its first instruction, and which of them postern
// blocked, not the person.
var state struct {
	mu    sync.Mutex
	held  []syscall.Signal
	added []syscall.Signal
}

// Hold makes sigs held: blocked in every thread of the process from its
// first instruction, as the Go runtime gives every thread it starts the
// mask the program started with. Where they are not blocked yet, or
// where startAgain says a setting of the caller's needs it
// (hugepages.TurnOff), it blocks them and starts the program again
// (package startagain), once for both, adding env to its environment for
// what the caller set up (hugepages.ChildEnv), so that it returns only
// in the program started so. The program started so never starts again.
// Where the exec fails, it returns with the signals not held, and a
// [Queue] catches them as os/signal passes them on. Call it first thing,
// before the program opens anything or starts a goroutine whose work an
// exec would cut short.
func Hold(startAgain bool, env []string, sigs ...syscall.Signal) {
	startagain.Restore()
	v, ours := os.LookupEnv(heldVar)
	os.Unsetenv(heldVar)
	mask, err := threadMask()
	if err != nil {
		return
	}
	var added, missing []syscall.Signal
	if ours {
		added = parse(v)
	}
	for _, s := range sigs {
		if !inSet(&mask, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		state.mu.Lock()
		state.held, state.added = slices.Clone(sigs), added
		state.mu.Unlock()
	}
	if ours || len(missing) == 0 && !startAgain {
		// Started again already (where the mask did not come
		// through, once is enough), or no need to.
		return
	}
	// The exec must come from the thread that blocked them.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	set := setOf(missing)
	if unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil) != nil {
		return
	}
	startagain.Exec(append(slices.Clip(env), heldVar+"="+format(append(added, missing...)))...)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
}

// Held reports whether Hold holds s.
func Held(s syscall.Signal) bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return slices.Contains(state.held, s)
}

// ChildEnv returns what to add to the environment of a program of
// postern's started from this one that holds the same signals (the
// daemon a detaching gateway starts), so that it knows which of them the
// person did not block: nothing where postern blocked none.
func ChildEnv() []string {
	state.mu.Lock()
	defer state.mu.Unlock()
	if len(state.added) == 0 {
		return nil
	}
	return []string{heldVar + "=" + format(state.added)}
}

// Release makes cmd, not yet started, start with the mask the person gave
// the program: where Hold blocked signals the person did not, cmd runs
// postern's own file first ([Init]), which unblocks them and executes
// the program cmd names, in the same process, with its arguments,
// environment, descriptors and directory. The program's failure to
// execute is then the exit status 127, with a line on cmd's standard
// error, where cmd.Start would have returned it. Anything else changes
// nothing.
func Release(cmd *exec.Cmd) {
	state.mu.Lock()
	added := state.added
	state.mu.Unlock()
	if len(added) == 0 || cmd.Err != nil {
		return
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(slices.Clip(env), releaseVar+"="+format(added))
	cmd.Args = append([]string{releaseName, cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
}

// Init, in postern's own file started by Release, unblocks the signals
// it was given and executes the program it was started for, and never
// returns; anywhere else it does nothing. Call it first thing in main.
func Init() {
	v, ok := os.LookupEnv(releaseVar)
	if !ok || len(os.Args) < 3 || os.Args[0] != releaseName {
		return
	}
	os.Unsetenv(releaseVar)
	runtime.LockOSThread()
	set := setOf(parse(v))
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	err := syscall.Exec(os.Args[1], os.Args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "postern: executing %s: %v\n", os.Args[1], err)
	os.Exit(127)
}

// threadMask returns the calling thread's signal mask.
func threadMask() (unix.Sigset_t, error) {
	var mask unix.Sigset_t
	err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &mask)
	return mask, err
}

// format and parse write and read a list of signals as their numbers,
// comma-separated.
func format(sigs []syscall.Signal) string {
	n := make([]string, len(sigs))
	for i, s := range sigs {
		n[i] = strconv.Itoa(int(s))
	}
	return strings.Join(n, ",")
}

func parse(v string) []syscall.Signal {
	var sigs []syscall.Signal
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(f); err == nil && n > 0 && n < 65 {
			sigs = append(sigs, syscall.Signal(n))
		}
	}
	return sigs
}
