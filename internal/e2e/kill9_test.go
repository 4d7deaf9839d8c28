package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The gateway killed with kill -9, again and again, while signers and
// bastion commands run at once (the short form of the fault campaign: a
// few workers, two kills). Afterwards:
//   - every signature a client received has its sign event in the audit
//     log, which still verifies;
//   - every bastion command that ran on the host has its journal entry
//     (none lost), and none of those is RETRY_SAFE, which would let it
//     run again without a person.
func TestKill9UnderSignersAndCommands(t *testing.T) {
	b := newBastionWorld(t, "")
	const signers, commanders, kills = 3, 2, 2
	tokens := filepath.Join(b.sshd.Dir, "tokens")

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		commands atomic.Int64
	)
	sg := startSigners(b.e, b.key, signers)
	signs := &sg.signs
	defer sg.halt()
	for i := range commanders {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				// Each command is unique: no retry guard stands between
				// them, and the host's file says which ran.
				token := fmt.Sprintf("c%d-%d", i, n)
				cmd := b.e.Command("ssh", b.sshArgs(b.sshd.Port, "echo "+token+" >> "+tokens+"; sleep 1")...)
				if cmd.Run() == nil {
					commands.Add(1)
				}
			}
		})
	}
	// progress waits until both kinds of work went through since the last
	// start, and a command runs: the kill lands among them.
	progress := func(round int) {
		t.Helper()
		s0, c0 := signs.Load(), commands.Load()
		deadline := time.Now().Add(3 * time.Minute)
		for signs.Load() < s0+3 || commands.Load() < c0+2 {
			if time.Now().After(deadline) {
				stop.Store(true)
				t.Fatalf("round %d: no progress (%d signatures, %d commands):\n%s", round, signs.Load()-s0, commands.Load()-c0, tail(b.agent.Log(), 3000))
			}
			sleep10ms()
		}
		if round == kills {
			return
		}
		for !strings.Contains(b.e.MustRun("postern", "journal", "list", "--status", "running").Stdout, "RUNNING") {
			if time.Now().After(deadline) {
				stop.Store(true)
				t.Fatalf("round %d: no command running", round)
			}
			sleep10ms()
		}
	}
	for round := range kills {
		progress(round)
		b.agent.Kill()
		b.agent = b.e.StartAgent()
		b.e.MustRun("postern", "unlock", "--passphrase-file", b.pass)
	}
	progress(kills)
	stop.Store(true)
	wg.Wait()

	signed := sg.halt()
	signaturesLogged(t, b.e, b.pass, signed)
	t.Logf("%d signatures and %d commands across %d kills", len(signed), commands.Load(), kills)

	// Every command that ran has an entry, and none of those may run
	// again without a person.
	var entries []entryJSON
	r := b.e.MustRun("postern", "journal", "list", "--limit", "100000", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &entries); err != nil {
		t.Fatalf("journal list --json: %v", err)
	}
	byToken := map[string]entryJSON{}
	for _, e := range entries {
		token, _, _ := strings.Cut(strings.TrimPrefix(e.Command, "echo "), " ")
		byToken[token] = e
	}
	ran := strings.Fields(string(mustRead(t, tokens)))
	if len(ran) == 0 {
		t.Fatal("no command ran")
	}
	for _, token := range ran {
		e, ok := byToken[token]
		switch {
		case !ok:
			t.Errorf("command %s ran but has no journal entry", token)
		case e.Status == "RETRY_SAFE previous_action_not_started":
			t.Errorf("command %s ran but its entry says it did not start: %+v", token, e)
		}
	}
	// A kill that lands on a started command leaves its outcome unknown,
	// whether or not the host had run its first word yet (a command cut
	// off before that leaves no token, and is unknown all the same).
	unknown := 0
	for _, e := range entries {
		if e.Status == "STATUS_UNKNOWN inspect_activity_journal" {
			unknown++
		}
	}
	t.Logf("%d commands ran on the host; %d entries unknown after the kills", len(ran), unknown)
	if unknown == 0 {
		t.Errorf("no kill landed on a started command")
	}
}

// signaturesLogged fails the test unless every process in pids has its
// sign event in the audit log, and the log verifies.
func signaturesLogged(t *testing.T, e *Env, pass string, pids []int) {
	t.Helper()
	show := e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass).Stdout
	logged := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(show), "\n") {
		var ev struct {
			Type   string            `json:"type"`
			Detail map[string]string `json:"detail"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit show: %v: %s", err, line)
		}
		if ev.Type == "sign" {
			pid, _ := strconv.Atoi(ev.Detail["pid"])
			logged[pid] = true
		}
	}
	for _, pid := range pids {
		if !logged[pid] {
			t.Errorf("the signature ssh-keygen (pid %d) received is not in the audit log", pid)
		}
	}
	if r := e.Run("postern", "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify after the kills: %s", r)
	}
}

// The gateway killed with kill -9 while signers use a key only an
// upstream ssh-agent holds: a request goes to the upstream before its
// record is written, and the record is made durable while the upstream
// signs. Every signature a client received has its sign event in the
// audit log, which still verifies.
func TestKill9UnderUpstreamSigners(t *testing.T) {
	need(t, "ssh-agent", "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	up := startUpstreamAgent(t, e)
	key := e.Keygen("up", "ed25519", 0, "")
	if r := up.run(e, "ssh-add", key); r.Code != 0 {
		t.Fatalf("ssh-add to the upstream: %s", r)
	}
	os.Remove(key)
	agent := e.StartAgent("--upstream", up.Socket)
	e.MustRun("postern", "unlock", "--passphrase-file", pass)

	const kills = 2
	sg := startSigners(e, key, 3)
	defer sg.halt()
	progress := func(round int) {
		t.Helper()
		s0 := sg.signs.Load()
		deadline := time.Now().Add(3 * time.Minute)
		for sg.signs.Load() < s0+3 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no progress:\n%s", round, tail(agent.Log(), 3000))
			}
			sleep10ms()
		}
	}
	for round := range kills {
		progress(round)
		agent.Kill()
		agent = e.StartAgent("--upstream", up.Socket)
		e.MustRun("postern", "unlock", "--passphrase-file", pass)
	}
	progress(kills)
	signed := sg.halt()
	signaturesLogged(t, e, pass, signed)
	if up.signRequests() < len(signed) {
		t.Fatalf("%d signatures received, the upstream signed %d", len(signed), up.signRequests())
	}
	t.Logf("%d signatures across %d kills; the upstream got %d sign requests", len(signed), kills, up.signRequests())
}

// signers sign with a key through "ssh-keygen -Y sign", each in a loop,
// until halted, and keep the pid of every ssh-keygen that received a
// signature.
type signers struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	signs atomic.Int64
	mu    sync.Mutex
	pids  []int
}

func startSigners(e *Env, key string, n int) *signers {
	s := &signers{}
	for i := range n {
		s.wg.Go(func() {
			for j := 0; !s.stop.Load(); j++ {
				msg := filepath.Join(e.Dir, fmt.Sprintf("m%d-%d", i, j))
				os.WriteFile(msg, []byte("x"), 0o600)
				cmd := e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", key+".pub", msg)
				if cmd.Run() == nil {
					if _, err := os.Stat(msg + ".sig"); err == nil {
						s.mu.Lock()
						s.pids = append(s.pids, cmd.Process.Pid)
						s.mu.Unlock()
						s.signs.Add(1)
					}
				}
				os.Remove(msg)
				os.Remove(msg + ".sig")
			}
		})
	}
	return s
}

// halt stops the signers, waits for them and returns the pids of those
// that received a signature.
func (s *signers) halt() []int {
	s.stop.Store(true)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.pids...)
}
