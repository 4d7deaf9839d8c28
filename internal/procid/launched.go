package procid

// PinLaunched pins pid as Pin does, for a process its caller has just
// started: once the program it executed has finished laying out its
// address space. A parent learns that an exec succeeded when the kernel
// closes the descriptors marked close-on-exec, which it does before it
// lays out the new address space (code and data, the arguments and the
// environment, then the stack and a randomized heap). A layout read in
// between is not the one the process keeps, and the next check would
// take the process for a new program (ErrChanged), ending a run that had
// just started.
func (t *Table) PinLaunched(pid int) (*Peer, error) {
	t.settle(pid)
	return t.Pin(pid)
}
