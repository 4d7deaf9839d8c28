package e2e

import (
	"strings"
	"testing"
)

// A terminal session whose client dies is hung up, as sshd hangs up the
// terminal of a connection that drops: its command gets SIGHUP, and the
// journal records that end. Closing its input would tell it nothing (a
// terminal's input does not end), and the command would wait on the
// host, holding whatever it held, for as long as the gateway runs.
func TestBastionTerminalOfADeadClientIsHungUp(t *testing.T) {
	b := newBastionWorld(t, "")
	command := "sleep 1000; echo ne''ver"
	cmd := b.e.Command("ssh", b.sshArgs(b.sshd.Port, "-tt", command)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.waitRunning(command)
	cmd.Process.Kill()
	cmd.Wait()
	// A deadline, only to turn a command left running into a failure.
	var last entryJSON
	for i := 0; i < 3000; i++ {
		if i%50 == 0 {
			if last = b.entryFor(command); last.End != nil || last.Unknown != nil {
				break
			}
		}
		sleep10ms()
	}
	if last.End == nil || last.End.Outcome != "signaled" || last.End.Signal != "HUP" || !last.End.ClientGone {
		t.Fatalf("journal after the client of a terminal session died: status %s, end %+v, unknown %+v", last.Status, last.End, last.Unknown)
	}
	// The output's tail (the command line holds no "never").
	if strings.Contains(b.e.MustRun("postern", "journal", "show", last.ID).Stdout, "never") {
		t.Fatal("the command went on after its hangup")
	}
}
