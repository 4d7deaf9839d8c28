// Package envlist reads an environment given as a list of KEY=VALUE
// pairs (os.Environ, exec.Cmd.Env, a gateway's recorded environment), as
// a process given it would: where a key is set twice, the last one wins,
// as os/exec makes it.
package envlist

import "strings"

// Get returns the value of key k in env, the last one set, or "".
func Get(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}
