package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// A host rule names a host as ssh_config's Host patterns do: whatever
// the port and with or without the root's trailing dot. The host
// inventory took its names from known_hosts, which names a host on
// another port "[127.0.0.1]:PORT" and keeps a name typed with a trailing
// dot as it was typed: a per-call rule for "127.0.0.1" and one for
// "*.example.com" ask on every login to those hosts, and postern check
// says so for the names the inventory holds, as the gateway acts, and
// finds them without their dot.
func TestHostRuleNamesTheHostWhateverItsPortOrTrailingDot(t *testing.T) {
	rules := "[[rule]]\nhost = \"127.0.0.1\"\napproval = \"per-call\"\n[[rule]]\nhost = \"*.example.com\"\napproval = \"per-call\"\n"
	w := newApprovalWorld(t, rules)
	dotted := startSSHD(t, pubKey(t, w.key)+"\n", "db.example.com.")
	w.e.MustRun("postern", "hosts", "import")
	// The run reads the known_hosts files of the configuration.
	w.agent.Reconfigure(t, fmt.Sprintf("known_hosts = [%q, %q]\n%s", w.sshd.KnownHosts, dotted.KnownHosts, rules))
	w.e.MustRun("postern", "hosts", "import", "db.example.com.")
	onPort := fmt.Sprintf("[127.0.0.1]:%d", w.sshd.Port)
	run := w.e.StartRun("coder")
	for _, c := range []struct {
		name, cmd string
	}{
		{onPort, sshCmd(w.sshd)},
		{"db.example.com.", sshCmd(dotted)},
	} {
		if out := w.e.MustRun("postern", "check", "--host", c.name).Stdout; !strings.HasPrefix(out, "per-call, because rule ") {
			t.Errorf("postern check --host %s: %s", c.name, out)
		}
		for i := 0; i < 2; i++ {
			job := run.Start(c.cmd)
			card := w.e.WaitCard()
			if card.Mode != "per-call" || card.Destination == nil || !contains(card.Destination.Names, c.name) {
				t.Fatalf("login %d to %s: the card is not a per-call card for it: %+v", i+1, c.name, card)
			}
			w.approve(card.ID, "--session")
			mustSucceed(t, c.name, job.Wait())
		}
	}
	w.e.NoCard()
	// The inventory's name found as rules read it: without the dot.
	if out := w.e.MustRun("postern", "check", "--host", "DB.example.com").Stdout; !strings.HasPrefix(out, "per-call, because rule 2:") {
		t.Errorf("postern check --host DB.example.com: %s", out)
	}
}

// An IPv4 host reached at its IPv4-mapped IPv6 address is named by ssh
// in known_hosts as it was reached ("[::ffff:127.0.0.1]:PORT"), and by
// the inventory that imports the line: a rule for its IPv4 address
// names it all the same.
func TestHostRuleNamesAnIPv4HostReachedAsMappedIPv6(t *testing.T) {
	w := newApprovalWorld(t, "[[rule]]\nhost = \"127.0.0.*\"\napproval = \"per-call\"\n")
	mapped := fmt.Sprintf("[::ffff:127.0.0.1]:%d", w.sshd.Port)
	line := mapped + " " + w.sshd.HostKey + "\n"
	w.e.MustRun("postern", "hosts", "import", "--file", w.e.WriteFile("mapped_known_hosts", line, 0o600))
	f, err := os.OpenFile(w.sshd.KnownHosts, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	if out := w.e.MustRun("postern", "check", "--host", mapped).Stdout; !strings.HasPrefix(out, "per-call, because rule 1:") {
		t.Errorf("postern check --host %s: %s", mapped, out)
	}
	res := w.e.startDetached("ssh", w.sshd.SSHArgs(w.sshd.User+"@::ffff:127.0.0.1", "true")...)
	card := w.e.WaitCard()
	if card.Mode != "per-call" || card.Destination == nil || !contains(card.Destination.Names, mapped) {
		t.Errorf("login to %s: the card is not a per-call card for it: %+v", mapped, card)
	}
	w.approve(card.ID, "--once")
	if r := <-res; r.Code != 0 {
		t.Fatalf("ssh to %s: %s", mapped, r)
	}
}

// postern check --host NAME answers for a login to NAME as the gateway
// decides it: ssh verifies the key known_hosts gives NAME, and the
// gateway names the login by that key in the host inventory. A per-call
// rule on the address a person logs in by, where the inventory names the
// host otherwise (db1), meets no login to it: check says so, and names
// the host, rather than a per-call answer for a host it could not name.
func TestCheckNamesAHostByTheKeyKnownHostsGivesIt(t *testing.T) {
	w := newApprovalWorld(t, "[[rule]]\nhost = \"127.0.0.1\"\napproval = \"per-call\"\n", "db1")
	w.e.MustRun("postern", "hosts", "import", "db1")
	addr := fmt.Sprintf("[127.0.0.1]:%d", w.sshd.Port)
	out := w.e.MustRun("postern", "check", "--host", addr).Stdout
	res := w.e.startDetached("ssh", w.sshd.SSHArgs(w.sshd.Target(), "true")...)
	card := w.e.WaitCard()
	w.approve(card.ID, "--once")
	if r := <-res; r.Code != 0 {
		t.Fatalf("ssh: %s", r)
	}
	if !strings.HasPrefix(out, card.Mode+", because known_hosts gives \""+addr+"\" the key of db1; ") {
		t.Fatalf("postern check --host %s: %s; the login to it had a %s card for %v", addr, out, card.Mode, card.Destination.Names)
	}
}
