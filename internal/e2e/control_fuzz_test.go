package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/confine"
	"github.com/postern/postern/internal/control"
	"github.com/postern/postern/internal/vault"
)

// FuzzControlRequest sends request lines to the control socket of a
// running gateway (postern agent, with an unlocked vault, its audit log
// and the bastion), as any process of the user may. Whatever the line,
// the gateway answers it with one response line (or, for a call that
// waits, is still waiting when the client gives up after 2 s), and it
// answers a status request afterwards: no line may crash or wedge it. The
// seeds are one request of every operation of the contract, built from
// its own types, and lines that are wrong in the ways a client can be.
func FuzzControlRequest(f *testing.F) {
	e := newEnv(f)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.Config("[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\n")
	a := e.startQuietAgentAt(e.Path("run", "postern", "agent.sock"))
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	for _, line := range controlSeeds(f) {
		f.Add(line)
	}
	for _, line := range []string{
		``, `not json`, `{}`, `null`, `[]`, `{"op":null}`, `{"op":"status","args":null}`, `{"op":"status","args":"x"}`,
		`{"op":"answer","args":{"id":"C00000000","decision":"once","subject":-1}}`,
		`{"op":"answer","args":{"id":"C00000000","decision":"session","subject":99999999999}}`,
		`{"op":"journal.list","args":{"limit":-1,"before":"\u0000"}}`,
		`{"op":"journal.resolve","args":{"id":"../../x","result":"exited","exit_status":-1}}`,
		`{"op":"cards","args":{"wait":true,"wait_for":-1,"version":18446744073709551615}}`,
		`{"op":"audit.read","args":{"since":"9999-12-31T23:59:59Z","log":"/dev/zero"}}`,
		`{"op":"vault.list","args":{"path":"/proc/self/mem"}}`,
		`{"op":"vault.change","args":{"passphrase":"dmF1bHQgcGFzcw==","params":{"Time":4294967295,"Memory":4294967295,"Threads":255}}}`,
		`{"op":"vault.change","args":{"passphrase":"dmF1bHQgcGFzcw==","add":[{"Private":"AAAA"}],"add_certificates":["AAAA"]}}`,
		`{"op":"run.start","args":{"id":"R00000000","pid":-1,"confinement":{"namespaces":true,"landlock_abi":-1}}}`,
		`{"op":"hosts.add","args":{"name":"\u001b[2J","keys":[{"key":"ssh-ed25519 AAAA"}]}}`,
		`{"op":"check","args":{"exes":[{"path":"/dev/zero"}],"hosts":[""]}}`,
	} {
		f.Add([]byte(line))
	}
	c := api.NewClient(a.Socket)
	f.Fuzz(func(t *testing.T, line []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := control.Exchange(ctx, c.Socket, line)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
			// A call that waits (for a card, say) may still wait.
		case err != nil:
			t.Fatalf("request %q: %v\ngateway log:\n%s", line, err, a.Log())
		default:
			var r api.Response
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("request %q: response %q: %v", line, out, err)
			}
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Status(ctx); err != nil {
			t.Fatalf("after request %q the gateway does not answer: %v\ngateway log:\n%s", line, err, a.Log())
		}
	})
}

// controlSeeds returns a request line for every operation of the
// control contract, with arguments of the right shape.
func controlSeeds(t testing.TB) [][]byte {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := vault.NewKey(priv, "fuzz")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	fp := ssh.FingerprintSHA256(pub)
	floor := vault.FloorParams()
	class, subject, exit := "production", 0, 0
	pass := []byte("vault pass")
	seeds := []struct {
		op   api.Op
		args any
	}{
		{api.OpStatus, nil},
		{api.OpLock, nil},
		{api.OpUnlock, api.UnlockArgs{Passphrase: pass}},
		{api.OpCards, api.CardsArgs{Console: true, Wait: true, WaitFor: time.Second}},
		{api.OpAnswer, api.AnswerArgs{ID: "C00000000", Decision: "session", Subject: &subject}},
		{api.OpSessions, nil},
		{api.OpJournalList, api.JournalArgs{Limit: 10, Status: "unknown"}},
		{api.OpJournalResolve, api.ResolveArgs{ID: "J00000000", Result: "ran", ExitStatus: &exit, Evidence: "seen"}},
		{api.OpRevoke, api.RevokeArgs{Target: "R00ff00ff"}},
		{api.OpRevoke, api.RevokeArgs{All: true}},
		{api.OpVaultChange, api.VaultChange{Passphrase: pass, Add: []vault.Key{key}}},
		{api.OpVaultChange, api.VaultChange{Passphrase: pass, Remove: fp}},
		{api.OpVaultChange, api.VaultChange{Passphrase: pass, NewPassphrase: pass, Params: &floor}},
		{api.OpHosts, nil},
		{api.OpHostsAdd, api.HostsAddArgs{Name: "prod-db-1", Class: &class, Keys: []api.HostKey{{Key: string(ssh.MarshalAuthorizedKey(pub)), Fingerprint: fp, Source: "file -"}}}},
		{api.OpHostsRemove, api.HostsRemoveArgs{Name: "prod-db-1"}},
		{api.OpCheck, api.CheckArgs{Hosts: []string{"prod-db-1"}, Key: fp, Exes: []api.CheckExe{{Path: "/usr/bin/ssh"}}}},
		{api.OpJournalNew, nil},
		{api.OpVaultList, api.VaultListArgs{}},
		{api.OpJournalFollow, nil},
		{api.OpAuditRead, api.AuditReadOptions{Run: "R00ff00ff"}},
		{api.OpCardsFollow, api.CardsFollowArgs{Console: true}},
		// Not run.prepare: the process that prepares a run is the run's,
		// and no approver from then on (the operations that want one would
		// be refused at once for the rest of the fuzzing).
		{api.OpRunStart, api.RunStart{ID: "R00ff00ff", PID: os.Getpid(), Confinement: confine.Level{Namespaces: true, Landlock: 7}}},
	}
	var lines [][]byte
	for _, s := range seeds {
		req := api.Request{Op: s.op}
		if s.args != nil {
			if req.Args, err = json.Marshal(s.args); err != nil {
				t.Fatal(err)
			}
		}
		line, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return lines
}
