package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// A bastion out of descriptors cannot identify or check the ssh process
// behind a connection: ssh is told so, never that the process changed
// or could not be identified for no reason. The gateway's soft
// descriptor limit is set just above what it holds, step by step, so
// that each step runs it out at another point of a connection through
// the bastion; then the limit is put back and the command goes through.
func TestBastionOutOfDescriptorsSaysSo(t *testing.T) {
	need(t, "prlimit")
	b := newBastionWorld(t, "")
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("ssh through the bastion: %s", r)
	}
	held, soft := softFiles(t, b.e, b.agent.PID())
	defer soft(1024)
	// From plenty of descriptors down, to the step where the process
	// behind an accepted connection cannot be identified; below it the
	// listener cannot accept, and ssh waits out postern connect's
	// minute, which one step at most does.
	refused := 0
	for k, done := 15, false; k >= -4 && !done; k-- {
		soft(held + k)
		r := b.ssh("true")
		say := fmt.Sprintf("with %d descriptors more than the gateway held: %s", k, r)
		if strings.Contains(r.Stderr, "changed") {
			t.Errorf("a bastion out of descriptors says the process changed, %s", say)
		}
		if strings.Contains(r.Stderr, "cannot identify") && !strings.Contains(r.Stderr, "out of descriptors or memory") {
			t.Errorf("a bastion out of descriptors does not say why it cannot identify the process, %s", say)
		}
		if r.Code != 0 {
			t.Log(say)
			refused++
		}
		done = strings.Contains(r.Stderr, "cannot identify") || strings.Contains(r.Stderr, "the bastion closed the connection")
	}
	if refused == 0 {
		t.Fatalf("no ssh through the bastion failed: the gateway never ran out of descriptors")
	}
	soft(1024)
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("ssh through the bastion once descriptors are free: %s\ngateway log:\n%s", r, tail(b.agent.Log(), 3000))
	}
}
