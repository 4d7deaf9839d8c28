package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// A bastion out of descriptors cannot identify or check the ssh process
// behind a connection: ssh is told so, never that the process changed or
// could not be identified for no reason. The gateway's soft descriptor
// limit is set to leave it 15 descriptors free, then 14, and so on to
// none (or as few as a hole in its descriptors' numbers leaves), so that
// each step runs it out at another point of a connection through the
// bastion (down to where it cannot accept, and spends the descriptor it
// holds in reserve to refuse the connection); then the limit is put back
// and the command goes through.
func TestBastionOutOfDescriptorsSaysSo(t *testing.T) {
	need(t, "prlimit")
	b := newBastionWorld(t, "")
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("ssh through the bastion: %s", r)
	}
	limitFor, soft := fdLimits(t, b.e, b.agent.PID())
	defer soft(1024)
	refused := 0
	for k := 15; k >= 0; k-- {
		soft(limitFor(k))
		r := b.ssh("true")
		say := fmt.Sprintf("with %d descriptors free: %s", k, r)
		if strings.Contains(r.Stderr, "changed") {
			t.Errorf("a bastion out of descriptors says the process changed, %s", say)
		}
		if r.Code != 0 {
			t.Log(say)
			refused++
			if !strings.Contains(r.Stderr, "out of descriptors or memory") {
				t.Errorf("a bastion out of descriptors does not say so, %s", say)
			}
		}
	}
	if refused == 0 {
		t.Fatalf("no ssh through the bastion failed: the gateway never ran out of descriptors")
	}
	soft(1024)
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("ssh through the bastion once descriptors are free: %s\ngateway log:\n%s", r, tail(b.agent.Log(), 3000))
	}
}
