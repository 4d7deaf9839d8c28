package procid

import "time"

// launchSettle bounds how long settle waits for an exec to finish.
var launchSettle = time.Second // a variable for the tests

// settle waits until the layout of process pid is complete (code,
// stack, arguments and environment placed) and reads the same twice in a
// row, or launchSettle has passed. A process whose layout does not show
// (not readable by this one) is not waited for: no layout is compared;
// nor one that has exited.
func (t *Table) settle(pid int) {
	if e, err := t.Exe(pid); err != nil || e.Hidden {
		return
	}
	deadline := time.Now().Add(launchSettle)
	var prev Layout
	for {
		st, err := t.Stat(pid)
		if err != nil {
			return // Pin says what became of it
		}
		l := st.Layout
		if l.complete() && l == prev || time.Now().After(deadline) {
			return
		}
		if !l.complete() {
			// An exec under way shows its new executable; a process
			// that has exited (a zombie, its address space gone) shows
			// none, and will not settle.
			if _, err := t.Exe(pid); err != nil {
				return
			}
		}
		prev = l
		time.Sleep(time.Millisecond)
	}
}

// complete reports whether the layout has what the end of an exec
// places: the code, the stack, the arguments and the environment.
func (l Layout) complete() bool {
	return l.StartCode != 0 && l.EndCode != 0 && l.StartStack != 0 && l.ArgStart != 0 && l.EnvStart != 0
}
