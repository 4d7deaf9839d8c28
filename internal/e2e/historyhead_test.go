package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// A reader that stops early (postern activity | head -1) ends the command
// as SIGPIPE ends a program, status 141 and not a word, as postern(1)
// says, whether the command reads the log itself or the gateway reads it
// for it; and the gateway, whose reads were cut short, reads the whole
// log for the next command.
func TestHistoryReaderThatStopsEarly(t *testing.T) {
	need(t, "bash", "head")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	// More than the pipe and the sockets hold.
	const events = 20000
	appendSigns(t, e.Path("state", "postern"), events)
	cmds := []string{"activity", "activity --json", "audit show", "audit show --json"}
	early := func(how string) {
		t.Helper()
		for _, c := range cmds {
			r := e.Run("bash", "-c", "postern "+c+" "+how+" | head -1 >/dev/null; echo ${PIPESTATUS[0]}")
			if got := strings.TrimSpace(r.Stdout); got != "141" || r.Stderr != "" {
				t.Errorf("postern %s %s | head -1: exit %s, want 141 (SIGPIPE) and nothing on standard error: %q", c, how, got, r.Stderr)
			}
		}
	}
	early("--offline --passphrase-file " + pass)
	e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	early("")
	early("")
	r := e.Run("bash", "-c", `set -o pipefail; postern activity | grep -c ' sign run=R1 '`)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != strconv.Itoa(events) {
		t.Fatalf("after reads cut short, the gateway read %s of %d signatures: exit %d\n%s", strings.TrimSpace(r.Stdout), events, r.Code, r.Stderr)
	}
}
