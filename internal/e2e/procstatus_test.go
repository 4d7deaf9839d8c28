package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// statusField reads one field of /proc/PID/status: its value, without
// the name and the spaces around it; "" where the file or the field
// cannot be read.
func statusField(pid int, field string) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// statusKB reads one figure, in KiB, of /proc/PID/status.
func statusKB(tb testing.TB, pid int, field string) int {
	tb.Helper()
	v := statusField(pid, field)
	n, err := strconv.Atoi(strings.TrimSuffix(v, " kB"))
	if err != nil {
		tb.Fatalf("/proc/%d/status: %s %q: %v", pid, field, v, err)
	}
	return n
}

// rss returns the resident memory of pid in KiB.
func rss(tb testing.TB, pid int) int { return statusKB(tb, pid, "VmRSS:") }
