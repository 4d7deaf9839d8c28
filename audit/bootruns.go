package audit

// maxBootRuns bounds the runs whose registration a reader of the log
// keeps: far more than a gateway boot has alive at once, and few enough
// that the facts of all of them take a megabyte or so.
const maxBootRuns = 4096

// bootRuns is what the run_registered events of the gateway boot being
// read said of each run (its process and label), for the later events
// that name the run without them. It keeps the maxBootRuns runs
// registered last: a log with millions of registrations in one boot (a
// program that starts runs in a loop, or entries anyone can append after
// the last checkpoint) is read in memory that does not grow with it, and
// an event of a run registered before the latest maxBootRuns shows only
// the facts it carries.
type bootRuns struct {
	boot  string
	runs  map[string]runFacts
	order []string // the runs in the order registered, a ring from next
	next  int
}

// runFacts is what a run's registration said of it.
type runFacts struct {
	process *Process
	label   string
}

// note takes the next event: another boot forgets the runs of the last
// one (runs are registered again in each boot that serves them), and a
// registration is kept.
func (b *bootRuns) note(e *Event) {
	if e.BootID != "" && e.BootID != b.boot {
		clear(b.runs)
		b.order, b.next = b.order[:0], 0
		b.boot = e.BootID
	}
	if e.Type != EventRunRegistered || e.Run == "" {
		return
	}
	if b.runs == nil {
		b.runs = map[string]runFacts{}
	}
	f, known := b.runs[e.Run]
	if e.Process != nil {
		f.process = e.Process
	}
	if e.Label != "" {
		f.label = e.Label
	}
	b.runs[e.Run] = f
	switch {
	case known:
	case len(b.order) < maxBootRuns:
		b.order = append(b.order, e.Run)
	default:
		delete(b.runs, b.order[b.next])
		b.order[b.next] = e.Run
		b.next = (b.next + 1) % maxBootRuns
	}
}

// facts returns what run's registration said, if it is kept.
func (b *bootRuns) facts(run string) runFacts { return b.runs[run] }
