// Package confine starts a run in a world smaller than the user's, so
// that a hostile program with the user's uid cannot reach around postern:
// it cannot see or edit postern's control plane, cannot reach the person
// who approves, and cannot type into the user's terminals.
//
// # What a confined run sees (Linux)
//
// [Start] launches the program in new user, mount, pid and IPC namespaces,
// mapped to the caller's own uid and gid (no setuid helper is involved),
// through a small helper: postern itself, re-executed as the namespaces'
// first process. The helper arranges the mounts, restricts itself with
// Landlock, drops every capability, starts the program, reaps orphans and
// reports the program's exit. Inside:
//
//   - every mount is read-only, except the working directory, the trees
//     of [Spec.ReadWrite] and of [Spec.Own], none of which may hold the
//     home directory ([Spec.Check]); every directory between such a
//     tree and a path hidden or shown read-only inside it is a mount point
//     of its own, which the run cannot rename;
//   - the trees of [Spec.Own] are the run's own: its cache directory is
//     one kept for runs, so that nothing a run leaves in a cache is what
//     the person's programs read or run ([Spec.Cache]);
//   - the trees of [Spec.Hide] are replaced by empty private directories:
//     postern's state and socket directories, $XDG_RUNTIME_DIR (the D-Bus
//     session bus, systemd's socket), the tmux and screen socket
//     directories, ~/.ssh, the X authority file (the cookie of the
//     person's display, which the network reaches), and the unix
//     sockets bound to a path that the run could reach only as the
//     person: the user's own (an ssh ControlMaster, an editor's), or not
//     open to every user (docker's) ([Spec.HideSockets]);
//   - the paths of [Spec.ReadOnly] are shown read-only, even inside a
//     hidden or writable tree (postern's configuration, known_hosts,
//     ~/.ssh/config, the askpass program, postern's executable, the
//     configuration and hooks of the working directory's git repository:
//     [Spec.Repository], the directories of $PATH inside a writable tree:
//     [Spec.Commands]), and the sockets of [Spec.Sockets] stay reachable
//     (the run's own agent socket);
//   - /tmp and /dev/shm are private and empty; /dev holds only null,
//     zero, full, random, urandom, tty and a private pseudo-terminal
//     instance, so no other terminal of the user can be opened;
//   - /proc is the run's own: processes outside the run are invisible;
//   - Landlock (best effort by the kernel's ABI) repeats the file rules,
//     forbids mounting, scopes abstract unix sockets and signals to the
//     run (ABI 6 and later), and keeps ptrace inside the run;
//   - given a terminal of the run's own ([Start], [Spec.Terminal]), the
//     program's controlling terminal is that one (package ptyrelay), whose
//     session the helper leads, the program its foreground process group;
//     the run holds nothing of the person's terminal;
//   - a seccomp filter refuses TIOCSTI and TIOCLINUX, which push
//     keystrokes into a terminal, and, when the run shares the person's
//     terminal, TIOCSPGRP, with which a suspended program would take that
//     terminal back and read what the user types at the shell, and the
//     keyring system calls, with which the run would link the person's
//     user keyring into its own and read the person's keys;
//   - when the run's job stops (the terminal stops the job, or the
//     program stops on its own terminal), every process of the run stops,
//     those that left its process group too ([Run.Suspend], [Run.Stops]);
//   - no capability survives into the program, even where uid 0 is mapped.
//
// The network is untouched. What cannot be done here: a program outside
// every sandbox, with the same uid, owns the run's user namespace and can
// therefore ptrace the run's processes (even where Yama's ptrace_scope is
// 1, which only restricts attaching across user namespaces the tracer does
// not own). See postern-run(1).
//
// Where user namespaces are disabled (user.max_user_namespaces = 0,
// kernel.unprivileged_userns_clone = 0, or an AppArmor restriction) Start
// fails with an [*UnavailableError] naming the cause; it never runs the
// program unconfined. On macOS nothing is confined: [Available] says so.
package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A Spec says what a confined run executes and sees. Paths are absolute
// and free of symbolic links ([Resolve] makes them so); paths that do not
// exist are ignored.
type Spec struct {
	Path string   // the program to execute
	Args []string // its argv, Args[0] included
	Env  []string // its environment
	Dir  string   // its working directory, writable

	ReadWrite []string // writable trees besides Dir
	ReadOnly  []string // shown read-only, even inside hidden or writable trees
	Hide      []string // replaced by empty private directories (or files)
	Sockets   []string // unix sockets, or directories of them, kept reachable inside hidden trees
	Own       []Own    // trees of the run's own, writable, in place of the person's ([Spec.Cache])

	// Terminal, set by [Start] when it is given one, says that the run
	// has a terminal of its own (package ptyrelay makes it), the
	// program's controlling terminal, in a session the helper leads: the
	// run then stops whole when the program stops (Ctrl-Z on that
	// terminal).
	Terminal bool `json:",omitempty"`
}

// An Own tree is the directory From, shown writable at Path in place of
// what is there, which the run does not see.
type Own struct {
	Path string `json:"path"`
	From string `json:"from"`
}

// Level says how a run is confined, for cards and logs.
type Level struct {
	Namespaces bool `json:"namespaces"`
	// Landlock is the Landlock ABI in force, 0 for none.
	Landlock int `json:"landlock_abi,omitempty"`
	// NoSeccomp says that the run has no seccomp filter (an
	// architecture the filter does not know): the person's keyring is
	// reachable, and TIOCSTI where the kernel allows it.
	NoSeccomp bool `json:"no_seccomp,omitempty"`
	// SharedTerminal says that the run has no terminal of its own (none
	// could be made) and shares the one postern run was started from,
	// which it can then read and type into.
	SharedTerminal bool `json:"shared_terminal,omitempty"`
}

// Confined reports whether the run is confined at all.
func (l Level) Confined() bool { return l.Namespaces }

// String renders the level as a card shows it: "confined: namespaces,
// Landlock ABI 7", or "unconfined".
func (l Level) String() string {
	if !l.Namespaces {
		return "unconfined"
	}
	s := "confined: namespaces"
	if l.Landlock > 0 {
		s += ", Landlock ABI " + strconv.Itoa(l.Landlock)
	} else {
		s += ", no Landlock"
	}
	if l.Landlock < landlockScopes {
		// The run shares the network namespace, where abstract sockets
		// live; Landlock scopes them from ABI 6 on.
		s += " (abstract unix sockets, such as X11's, reachable)"
	}
	if l.NoSeccomp {
		s += ", no seccomp filter (the person's keyring reachable, and TIOCSTI where the kernel allows it)"
	}
	if l.SharedTerminal {
		s += ", sharing the terminal it was started from (no terminal of its own could be made: it can read that terminal and type into it)"
	}
	return s
}

// landlockScopes is the first Landlock ABI that scopes abstract unix
// sockets to the run.
const landlockScopes = 6

// UnavailableError reports that confinement cannot be set up here, and
// why.
type UnavailableError struct {
	Op    string // what failed: "creating the run's namespaces", ...
	Err   error
	Cause string // the system setting responsible, when one is known
}

func (e *UnavailableError) Error() string {
	s := "cannot confine the run: " + e.Op
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Cause != "" {
		s += " (" + e.Cause + ")"
	}
	return s
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// ErrUnsupported is the error of [Available] where the platform has no
// confinement.
var ErrUnsupported = errors.New("this system cannot confine a run")

// UserRuntimeDir is the user's runtime directory as systemd makes it,
// /run/user/UID, which runs never see, even where XDG_RUNTIME_DIR names
// no directory.
func UserRuntimeDir() string { return fmt.Sprintf("/run/user/%d", os.Getuid()) }

// helperName is argv[0] of the helper; [Init] recognizes it.
const helperName = "postern-confine-helper"

// Under reports whether path p is dir or inside it.
func Under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// writableTrees returns the trees the run writes: the working directory
// and the read_write trees (absolute, cleaned).
func (s *Spec) writableTrees() []string {
	var out []string
	for _, w := range append([]string{s.Dir}, s.ReadWrite...) {
		if filepath.IsAbs(w) {
			out = append(out, filepath.Clean(w))
		}
	}
	return out
}

// writable reports whether p is in the working directory or a
// read_write tree, which the run writes, however p and the trees are
// spelled: through symbolic links outside them (~/code leading to where
// the person works), or not (located).
func (s *Spec) writable(p string) bool {
	return underAny(s.located(p), s.realTrees())
}

// realTrees returns the writable trees where they lead, free of
// symbolic links (a tree that cannot be resolved as it is spelled).
func (s *Spec) realTrees() []string {
	out := s.writableTrees()
	for i, w := range out {
		if r, err := filepath.EvalSymlinks(w); err == nil {
			out[i] = r
		}
	}
	return out
}

// underAny reports whether p is one of trees or inside one.
func underAny(p string, trees []string) bool {
	return slices.ContainsFunc(trees, func(w string) bool { return Under(p, w) })
}
