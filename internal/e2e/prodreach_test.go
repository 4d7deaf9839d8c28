package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// A production host asks on every login inside an approved run, however
// the run names or reaches it: by IP with no known_hosts, under the
// harmless name of a host the run is approved for (a line it planted in
// a known_hosts file the gateway reads, in another case, with a trailing
// dot), and through a jump host
// that is not production (ProxyCommand ssh -W, whose own login rides the
// session): the destination is the host key session-bind proved, named
// by the host inventory, never a name the client gives.
func TestProductionHostAskedHoweverItIsReached(t *testing.T) {
	w, prod, _, a := productionWorld(t)

	// What the run writes: a line in the known_hosts the gateway reads
	// that calls the production host's key by the approved host's name,
	// and a jump through that host.
	planted := w.sshd.KnownHosts
	f, err := os.OpenFile(planted, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "git-host,GIT-HOST,git-host.,[127.0.0.1]:%d %s\n", prod.Port, prod.HostKey)
	f.Close()
	jump := "ssh " + strings.Join(w.sshd.SSHArgs("-o", "HostKeyAlias=git-host", "-W", "%h:%p", w.sshd.Target()), " ")
	loose := func(extra ...string) string {
		args := []string{"-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentityFile=/dev/null", "-o", "ConnectTimeout=20", "-o", "GlobalKnownHostsFile=/dev/null"}
		return "ssh " + strings.Join(append(args, extra...), " ")
	}
	for _, c := range []struct{ name, cmd string }{
		{"by IP, no known_hosts", loose("-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-p", fmt.Sprint(prod.Port), prod.Target(), "true")},
		{"as git-host", loose("-o", "UserKnownHostsFile="+planted, "-o", "HostKeyAlias=git-host", "-p", fmt.Sprint(prod.Port), prod.Target(), "true")},
		{"as GIT-HOST", loose("-o", "UserKnownHostsFile="+planted, "-o", "HostKeyAlias=GIT-HOST", "-p", fmt.Sprint(prod.Port), prod.Target(), "true")},
		{"as git-host.", loose("-o", "UserKnownHostsFile="+planted, "-o", "HostKeyAlias=git-host.", "-p", fmt.Sprint(prod.Port), prod.Target(), "true")},
		{"through git-host", loose("-o", "UserKnownHostsFile="+prod.KnownHosts, "-o", "HostKeyAlias=prod-db-1", "-o", "'ProxyCommand="+jump+"'", "-p", fmt.Sprint(prod.Port), prod.Target(), "true")},
	} {
		for i := 0; i < 2; i++ {
			job := a.Start(c.cmd)
			card := w.e.WaitCard()
			if card.Mode != "per-call" || card.Destination == nil || !contains(card.Destination.Names, "prod-db-1") {
				t.Fatalf("%s, login %d: the card is not a per-call card for prod-db-1: %+v", c.name, i, card)
			}
			w.approve(card.ID, "--once")
			mustSucceed(t, c.name, job.Wait())
		}
	}
	w.e.NoCard()
}

// A mark added after the run's approval counts at once: git-host, whose
// logins the run's session covered, asks on every login once the host
// inventory gives it the class production, and so does it after a
// gateway restart, for the run restored.
func TestProductionMarkAddedAfterTheApprovalAsks(t *testing.T) {
	w, _, _, a := productionWorld(t)
	git := sshCmd(w.sshd, "-o", "HostKeyAlias=git-host")
	mustSucceed(t, "git-host in the session", a.Do(git))
	w.e.NoCard()
	w.e.MustRun("postern", "hosts", "add", "git-host", "--class", "production")
	for _, restart := range []bool{false, true} {
		if restart {
			w.agent.Stop()
			w.agent = w.e.StartAgent()
			w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
		}
		for i := 0; i < 2; i++ {
			job := a.Start(git)
			c := w.e.WaitCard()
			if c.Mode != "per-call" || c.Destination == nil || !contains(c.Destination.Names, "git-host") {
				t.Fatalf("restart %v, login %d to git-host, production now: %+v", restart, i, c)
			}
			w.approve(c.ID, "--session")
			mustSucceed(t, "git-host", job.Wait())
		}
	}
}
