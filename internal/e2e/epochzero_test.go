package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// A gateway with a new state directory and no vault is at epoch 0. A
// session approved there ends at postern lock, and the gateway goes on
// answering: the lock ends the grant as any lock does.
func TestLockEndsAGrantOfTheFirstEpoch(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	k := e.Keygen("k", "ed25519", 0, "")
	sshd := startSSHD(t, pubKey(t, k)+"\n")
	e.Config(fmt.Sprintf("known_hosts = [%q]\n", sshd.KnownHosts))
	a := e.StartAgent()
	e.AddKey(k)
	e.StartConsole()
	run := e.StartRun("coder")
	job := run.Start(sshCmd(sshd))
	e.MustRun("postern", "approve", e.WaitCard().ID, "--session")
	mustSucceed(t, "the approved login", job.Wait())
	if st := e.MustRun("postern", "status", "--json").Stdout; !strings.Contains(st, `"epoch": 0`) {
		t.Fatalf("status before the lock, not at epoch 0:\n%s", st)
	}
	if r := e.Run("postern", "lock"); r.Code != 0 {
		t.Fatalf("postern lock: %s\n%s", r, a.Log())
	}
	if r := e.Run("postern", "status", "--json"); r.Code != 0 || !strings.Contains(r.Stdout, `"state": "locked"`) && !strings.Contains(r.Stdout, `"no_password": true`) {
		t.Fatalf("status after the lock: %s\n%s", r, a.Log())
	}
	if r := e.Run("postern", "sessions", "--json"); r.Code != 0 || strings.Contains(r.Stdout, `"grant"`) {
		t.Fatalf("sessions after the lock: %s", r)
	}
}
