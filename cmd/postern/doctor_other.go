//go:build !linux

package main

// confinement reports whether "postern run" can confine a run here: not
// on this system.
func confinement() finding {
	return finding{Check: "confinement", Status: "warn", Detail: "runs are not confined on this system: a same-user program could step outside the tree checks (every card says so)"}
}
