package startagain

import (
	"os"
	"strings"
)

// rename gives every thread of the process the name name: the first
// thread's is the name ps and pgrep show, and a thread started later
// takes the name of the one that starts it. It goes over the threads
// until it finds none to rename, as one may start another meanwhile.
func rename(name string) {
	for range 10 {
		renamed := false
		for _, t := range threadNames() {
			if t.name != name {
				os.WriteFile(t.path, []byte(name), 0)
				renamed = true
			}
		}
		if !renamed {
			return
		}
	}
}

// Names returns the name of each thread of the process, as the kernel
// has them.
func Names() []string {
	var names []string
	for _, t := range threadNames() {
		names = append(names, t.name)
	}
	return names
}

type threadName struct{ path, name string }

// threadNames reads the name of each thread of the process.
func threadNames() []threadName {
	tasks, _ := os.ReadDir("/proc/self/task")
	var names []threadName
	for _, t := range tasks {
		p := "/proc/self/task/" + t.Name() + "/comm"
		if b, err := os.ReadFile(p); err == nil {
			names = append(names, threadName{p, strings.TrimSuffix(string(b), "\n")})
		}
	}
	return names
}
