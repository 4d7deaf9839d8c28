package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
)

// What a gateway reports of itself holds words of others: the name a
// desktop notification service gives itself (any program on the session
// bus can be that service where none runs) and the error of a
// configuration file a program of the user's wrote. postern doctor shows
// them escaped, as postern status does, and so do the lines of postern
// agent --ensure that say where cards appear, whatever shell reads them.
func TestDoctorShowsOthersWordsEscaped(t *testing.T) {
	st := &api.Status{Approvers: []api.Approver{
		{Name: "console", Detail: "none attached"},
		{Name: "notification", Reachable: true, Detail: hostile + " (pid 7), with Approve once and Deny"},
	}}
	st.Config.Path = "/home/u/.config/postern/config.toml"
	st.Config.Error = "line 3: unknown setting " + hostile
	var b bytes.Buffer
	fs := statusFindings(st)
	printFindings(&b, fs)
	noRaw(t, "doctor", b.String())
	lines := len(fs)
	for _, f := range fs {
		if f.Fix != "" {
			lines++
		}
	}
	if n := strings.Count(b.String(), "\n"); n != lines {
		t.Fatalf("doctor printed %d lines for %d findings and their fixes:\n%s", n, len(fs), b.String())
	}
	var e bytes.Buffer
	for _, line := range whereCards(st.Approvers) {
		echo(&e, line)
	}
	// The lines are read by the person's shell, whose echo may read
	// backslashes (dash's, zsh's).
	for _, sh := range []string{"sh", "bash", "zsh"} {
		out, err := exec.Command(sh, "-c", e.String()).Output()
		if err != nil {
			t.Fatalf("%s reading the lines of agent --ensure: %v\n%s", sh, err, e.String())
		}
		noRaw(t, "agent --ensure, read by "+sh, string(out))
	}
}
