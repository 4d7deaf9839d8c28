package e2e

// Faults the gateway must outlive: running out of descriptors, a flood
// of connections, hostile peers. It keeps serving, loses nothing, and
// says what happened.

import (
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With every descriptor taken by idle connections (to the agent socket,
// bounded per user, and to the control socket), accept and the
// identification of peers fail with EMFILE: the gateway pauses, sheds the
// connections idle the longest, and goes on. It never exits (which would
// take the keys and every grant with it). Once the storm of new
// connections is over, with the idle agent connections still held, a new
// client is served: the bound, or, while no descriptor is free, the
// shedding, makes room for it by closing a connection idle a second or
// more (until then the client is refused, and asks again). The flood's
// connections past the bound, which send nothing, are refused one by one
// from the listen queue, each let go within a second; while each was
// held for as long as a request may take (30 s), the gateway stayed out
// of descriptors for up to a minute after the storm. A client is given a
// minute all the same: what is claimed is that it is served, not how soon.
func TestDescriptorsExhausted(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	a := e.StartAgentWithFiles(160)
	k := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(k)
	flood := func(sock string, n int) []net.Conn {
		var cs []net.Conn
		for range n {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatalf("dial %s: %v", sock, err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	closeAll := func(cs []net.Conn) {
		for _, c := range cs {
			c.Close()
		}
	}
	idle := flood(a.Socket, 400)
	defer closeAll(idle)
	storm := flood(a.Socket+".ctl", 400)
	defer closeAll(storm)
	a.WaitLog(t, "cannot accept a connection")
	closeAll(storm)
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case <-a.done:
			t.Fatalf("the gateway exited:\n%s", tail(a.Log(), 3000))
		default:
		}
		r := e.Run("ssh-add", "-l")
		if r.Code == 0 && strings.Contains(r.Stdout, "ED25519") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-add -l with idle connections held: %s\nagent log:\n%s", r, tail(a.Log(), 3000))
		}
		sleep10ms() // the storm's last connections are still being refused
	}
	// The storm's control connections still in the listen queue are
	// taken in, each counted until its end is read.
	statusAtTheBound(t, e, "after the storm")
	closeAll(idle)
	if r := e.Run("ssh-add", "-l"); r.Code != 0 {
		t.Fatalf("ssh-add -l after the flood: %s", r)
	}
}

// SIGTERM wipes the keys at once; a command that ends within the grace
// period ([bastion] stop_grace) is recorded as it ended, one still running
// after it is cut off and recorded unknown; the gateway exits. The grace
// period is five times the short command's length, so that a loaded
// machine still ends it in time.
func TestStopGivesCommandsAGracePeriod(t *testing.T) {
	mostlyWaits(t)
	b := newBastionWorld(t, "")
	cfg, err := os.ReadFile(b.e.Path("config", "postern", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// stop_grace goes in [bastion], the file's last table before the
	// [run] section Config adds.
	b.e.Config(strings.Replace(string(cfg), runSection(), "", 1) + "stop_grace = \"5s\"\n")
	b.agent.Stop()
	b.agent = b.e.StartAgent()
	b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)

	short, long := "sleep 1; echo finished", "sleep 300"
	results := make(chan Result, 2)
	for _, c := range []string{short, long} {
		go func() { results <- b.ssh(c) }()
	}
	b.waitRunning(short)
	b.waitRunning(long)
	b.agent.cmd.Process.Signal(syscall.SIGTERM)
	<-b.agent.done
	<-results
	<-results
	log := b.agent.Log()
	wiped, cut := strings.Index(log, "keys wiped"), strings.Index(log, "cut off after the grace period")
	if wiped < 0 || cut < 0 || wiped > cut {
		t.Fatalf("the keys were not wiped before the grace period:\n%s", log)
	}
	if e := b.entryFor(short); e.Status != "COMPLETED" || e.End == nil || e.End.ExitStatus != 0 {
		t.Fatalf("the command that ended within the grace period: %+v", e)
	}
	if e := b.entryFor(long); e.Status != "STATUS_UNKNOWN inspect_activity_journal" || e.Unknown == nil || e.Unknown.Reason != "bastion_stopped" {
		t.Fatalf("the command cut off: %+v (unknown: %+v)\ngateway log:\n%s", e, e.Unknown, tail(log, 4000))
	}
}

// tail is the end of s, at most n bytes of it, marked where cut.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
