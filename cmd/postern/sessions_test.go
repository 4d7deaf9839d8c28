package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/gateway/api"
)

// A run prepared and not yet started has no process: it is shown
// starting, not as a process with pid 0.
func TestSessionsShowARunNotYetStartedAsStarting(t *testing.T) {
	pending := api.RunState{RunView: approvals.RunView{ID: "R1", Launched: true, Label: "refactor"}, Pending: true}
	var b bytes.Buffer
	printSessions(&b, &api.SessionsResult{Runs: []api.RunState{pending}})
	m := newConsoleModel(nil, nil)
	m.Update(refreshMsg{sessions: &api.SessionsResult{Runs: []api.RunState{pending}}})
	_, rows := m.runRows()
	for name, line := range map[string]string{"postern sessions": b.String(), "the console": rows[0]} {
		if !strings.Contains(line, "starting") || strings.Contains(line, "pid 0") {
			t.Errorf("%s does not show the run as starting:\n%s", name, line)
		}
	}
}
