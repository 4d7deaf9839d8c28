// Package startagain starts a program again in the process it runs in,
// for a setting that must hold from the program's first instruction: one
// the kernel applies to memory as it is first touched (huge pages), or
// one the Go runtime copies to every thread it starts (the signal mask).
// By the time main runs, the runtime has touched its memory and started
// its threads; an execve of the program's own file makes them again
// under the setting.
//
// The program started so has the same process id, arguments, environment
// and descriptors, and keeps its name: the kernel names a program after
// the file it executes, /proc/self/exe, "exe"; Exec hands the name on and
// Restore gives it back. A program of postern's that starts another
// (the daemon a detaching gateway starts) hands it [NameEnv] for the
// same.
package startagain

import (
	"os"
	"strings"
	"syscall"

	"github.com/postern/postern/internal/envlist"
)

// nameVar holds the name of the program that started this one again,
// until Restore gives it back and removes it.
const nameVar = "POSTERN_NAME"

// Exec starts the program again, with env added to its environment and
// its name handed on. It returns only if the exec failed.
func Exec(env ...string) error {
	all := append(os.Environ(), env...)
	// A name env hands on already (hugepages.ChildEnv's) stands.
	if envlist.Get(env, nameVar) == "" {
		all = append(all, NameEnv())
	}
	return syscall.Exec("/proc/self/exe", os.Args, all)
}

// NameEnv returns what to add to the environment of a program of
// postern's started from this one so that Restore gives it this
// program's name: that of its first thread, which ps shows.
func NameEnv() string {
	b, _ := os.ReadFile("/proc/self/comm")
	return nameVar + "=" + strings.TrimSuffix(string(b), "\n")
}

// Restore gives the process the name its environment hands on, where
// Exec or NameEnv handed one, and removes it from the environment, so
// that no program the process starts sees it. Calling it again does
// nothing.
func Restore() {
	name, ok := os.LookupEnv(nameVar)
	if !ok {
		return
	}
	os.Unsetenv(nameVar)
	rename(name)
}
