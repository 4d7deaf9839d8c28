package procid

// InspectParent is what an ancestry walk reads of a parent, for the
// external tests.
func (t *Table) InspectParent(pid int) (Process, error) { return t.inspectParent(pid) }
