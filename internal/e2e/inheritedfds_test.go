package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// A descriptor the gateway inherited from whatever started it (here a
// file its shell left open) is the gateway's, not the programs' it
// starts: the askpass program that shows a card does not get it, where
// it did, as every program the gateway starts did. The command of
// "postern agent COMMAND" still gets them.
func TestDescriptorsTheGatewayInheritedDoNotReachAskpass(t *testing.T) {
	e := newEnv(t)
	e.Config(`approval = "none"`)
	marker := e.WriteFile("inherited-marker", "x", 0o600)
	fds := e.Path("askpass.fds")
	prog := e.WriteFile("askpass", fmt.Sprintf("#!/bin/sh\nls -l /proc/$$/fd > %s\nexit 1\n", fds), 0o755)
	e.Setenv("SSH_ASKPASS", prog)
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	a := e.startAgentVia([]string{"sh", "-c", `exec 7<` + marker + `; exec "$0" "$@"`}, "-d", e.Path("run", "postern", "agent.sock"))
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k, "-c")
	msg := e.WriteFile("m", "x", 0o600)
	if r := e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg); r.Code == 0 {
		t.Fatal("signed though askpass said no")
	}
	listing := string(mustRead(t, fds))
	if !strings.Contains(listing, " 2 -> ") {
		t.Fatalf("askpass's descriptors were not listed:\n%s", listing)
	}
	if strings.Contains(listing, marker) {
		t.Fatalf("askpass got the descriptor the gateway inherited:\n%s\n%s", listing, a.Log())
	}
	// The command of "postern agent COMMAND" gets them all the same, at
	// the same numbers, as ssh-agent's command does.
	r := e.MustRun("sh", "-c", `exec 7<`+marker+`; exec postern agent -a "$0" sh -c 'ls -l /proc/$$/fd'`, e.Path("cmd.sock"))
	if !strings.Contains(r.Stdout, "7 -> "+marker) {
		t.Fatalf("the command of postern agent did not get descriptor 7:\n%s", r.Stdout)
	}
}
