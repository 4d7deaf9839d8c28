package approvals

import (
	"testing"

	"github.com/postern/postern/internal/procid"
)

// An agent run by an interpreter ("node /usr/local/bin/claude") is
// preselected by the names on its command line, and the nearest agent
// is preselected, however it is named.
func TestPreselectsTheAgentItsCommandLineNames(t *testing.T) {
	w := newWorld(t)
	node := w.f.Exe("node", "an interpreter")
	w.f.Set(40, 1, 400, node, "node", "/usr/local/bin/claude", "--resume")
	w.f.Set(41, 40, 410, w.f.Exe("bash", "a shell"), "bash")
	w.f.Set(42, 41, 420, w.f.Exe("ssh", "ssh"), "ssh", "host")
	ch := w.decide(w.req(42))
	c := w.card()
	if got := c.Subjects[c.Selected]; got.PID != 40 {
		t.Fatalf("preselected %s (%d), want node (40), the agent its command line names: %+v", got.Name, got.PID, c.Subjects)
	}
	w.answer(c.ID, VerdictDeny, 30)
	<-ch
}

// A process's command line is read only when its executable's and its
// kernel name do not name an agent, and never when no agent is
// configured.
func TestIsAgentReadsTheCommandLineLast(t *testing.T) {
	claude := &procid.Process{Comm: "claude", Exe: procid.Exe{Path: "/usr/bin/claude"}}
	other := &procid.Process{Comm: "bash", Exe: procid.Exe{Path: "/usr/bin/bash"}}
	read := 0
	argv := func(a ...string) func() []string {
		return func() []string { read++; return a }
	}
	p := &Policy{Agents: []string{"claude"}}
	if !p.isAgent(claude, argv()) || read != 0 {
		t.Fatalf("an agent by its executable's name: read its command line %d times", read)
	}
	if !p.isAgent(other, argv("node", "/opt/claude")) || read != 1 {
		t.Fatalf("an agent by its command line: read it %d times", read)
	}
	if p.isAgent(other, argv("bash", "-c", "claude")) {
		t.Fatal("an agent named only by a third argument was preselected")
	}
	read = 0
	if (&Policy{}).isAgent(claude, argv("claude")) || read != 0 {
		t.Fatalf("no agent configured: an agent found, command line read %d times", read)
	}
}
