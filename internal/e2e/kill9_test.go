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
		stop       atomic.Bool
		wg         sync.WaitGroup
		mu         sync.Mutex
		signedPIDs []int // ssh-keygen processes that received a signature
		signs      atomic.Int64
		commands   atomic.Int64
	)
	for i := range signers {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				sig := filepath.Join(b.e.Dir, fmt.Sprintf("m%d-%d", i, n))
				os.WriteFile(sig, []byte("x"), 0o600)
				cmd := b.e.Command("ssh-keygen", "-Y", "sign", "-n", "file", "-f", b.key+".pub", sig)
				if cmd.Run() == nil {
					if _, err := os.Stat(sig + ".sig"); err == nil {
						mu.Lock()
						signedPIDs = append(signedPIDs, cmd.Process.Pid)
						mu.Unlock()
						signs.Add(1)
					}
				}
				os.Remove(sig)
				os.Remove(sig + ".sig")
			}
		})
	}
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

	// Every signature received is in the audit log.
	show := b.e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", b.pass).Stdout
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
	mu.Lock()
	for _, pid := range signedPIDs {
		if !logged[pid] {
			t.Errorf("the signature ssh-keygen (pid %d) received is not in the audit log", pid)
		}
	}
	t.Logf("%d signatures and %d commands across %d kills", len(signedPIDs), commands.Load(), kills)
	mu.Unlock()
	if r := b.e.Run("postern", "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify after the kills: %s", r)
	}

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
