package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

type statusJSON struct {
	BootID string `json:"boot_id"`
	Vault  struct {
		State string `json:"state"`
		Epoch uint64 `json:"epoch"`
	} `json:"vault"`
	Counts struct {
		Keys int `json:"keys"`
	} `json:"counts"`
}

func status(t testing.TB, e *Env) statusJSON {
	t.Helper()
	var st statusJSON
	out := e.MustRun("postern", "status", "--json").Stdout
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

func TestVaultLifecycle(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen", "ssh", "sshd")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "correct horse\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	if r := e.Run("postern", "vault", "init", "--passphrase-file", pass); r.Code == 0 {
		t.Fatal("a second init succeeded")
	}
	// A passphrase-protected key is imported with its own passphrase.
	k := e.Keygen("vaulted", "ed25519", 0, "key-pass")
	e.Setenv("SSH_ASKPASS", e.WriteFile("keypass", "#!/bin/sh\necho key-pass\n", 0o755))
	e.Setenv("SSH_ASKPASS_REQUIRE", "force")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	os.Remove(k)
	e.Unsetenv("SSH_ASKPASS")
	e.Unsetenv("SSH_ASKPASS_REQUIRE")
	list := e.MustRun("postern", "vault", "list", "--json", "--passphrase-file", pass).Stdout
	if !strings.Contains(list, fingerprint(t, e, k)) || !strings.Contains(list, `"comment": "vaulted"`) {
		t.Fatalf("vault list:\n%s", list)
	}

	e.StartAgent()
	st := status(t, e)
	if st.Vault.State != "locked" || st.Counts.Keys != 0 {
		t.Fatalf("at start: %+v", st)
	}
	if r := e.Run("ssh-add", "-l"); r.Code != 1 {
		t.Fatalf("locked vault listed keys: %s", r)
	}
	// Wrong passphrase: refused, clearly.
	bad := e.WriteFile("bad", "wrong\n", 0o600)
	if r := e.Run("postern", "unlock", "--passphrase-file", bad); r.Code == 0 || !strings.Contains(r.Stderr, "wrong passphrase") {
		t.Fatalf("unlock with a wrong passphrase: %s", r)
	}
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	st2 := status(t, e)
	if st2.Vault.State != "unlocked" || st2.Vault.Epoch <= st.Vault.Epoch || st2.Counts.Keys != 1 {
		t.Fatalf("after unlock: %+v (before %+v)", st2, st)
	}
	sshd := startSSHD(t, pubKey(t, k)+"\n")
	e.MustRun("ssh", sshd.SSHArgs(sshd.Target(), "true")...)

	// ssh-add -x locks the vault (wiping its keys); -X takes the vault
	// passphrase.
	e.RunInput("any\nany\n", "ssh-add", "-x")
	if st3 := status(t, e); st3.Vault.State != "locked" || st3.Vault.Epoch <= st2.Vault.Epoch {
		t.Fatalf("after ssh-add -x: %+v", st3)
	}
	if r := e.Run("ssh", sshd.SSHArgs(sshd.Target(), "true")...); r.Code == 0 {
		t.Fatal("logged in with a locked vault")
	}
	if r := e.RunInput("correct horse\n", "ssh-add", "-X"); r.Code != 0 {
		t.Fatalf("ssh-add -X with the vault passphrase: %s", r)
	}
	e.MustRun("ssh", sshd.SSHArgs(sshd.Target(), "true")...)

	// A key added to the vault while the gateway runs is picked up, and
	// the change moves the epoch on.
	before := status(t, e)
	k2 := e.Keygen("second", "ecdsa", 256, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k2)
	waitFor(t, func() bool { s := status(t, e); return s.Counts.Keys == 2 && s.Vault.Epoch > before.Vault.Epoch })

	// lock, and lock again: the command is idempotent.
	e.MustRun("postern", "lock")
	if r := e.MustRun("postern", "lock"); !strings.Contains(r.Stdout, "already locked") {
		t.Fatalf("second lock: %s", r)
	}
	if st := status(t, e); st.Vault.State != "locked" || st.Counts.Keys != 0 {
		t.Fatalf("after lock: %+v", st)
	}

	// passwd: the old passphrase stops working, the new one unlocks. A
	// passphrase change rotates the vault's data key; the gateway that
	// made it keeps the new one and stays unlocked, in a new epoch.
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	before = status(t, e)
	newPass := e.WriteFile("newpass", "battery staple\n", 0o600)
	e.MustRun("postern", "vault", "passwd", "--passphrase-file", pass, "--new-passphrase-file", newPass)
	if st := status(t, e); st.Vault.State != "unlocked" || st.Vault.Epoch <= before.Vault.Epoch || st.Counts.Keys != 2 {
		t.Fatalf("after passwd: %+v (before %+v)", st, before)
	}
	if r := e.Run("postern", "vault", "list", "--passphrase-file", pass); r.Code == 0 {
		t.Fatal("old passphrase still opens the vault")
	}
	e.MustRun("postern", "vault", "remove", "--passphrase-file", newPass, "second")
	e.MustRun("postern", "lock")
	if r := e.Run("postern", "unlock", "--passphrase-file", pass); r.Code == 0 {
		t.Fatal("old passphrase still unlocks the gateway")
	}
	e.MustRun("postern", "unlock", "--passphrase-file", newPass)
	if st := status(t, e); st.Vault.State != "unlocked" || st.Counts.Keys != 1 {
		t.Fatalf("after passwd and remove: %+v", st)
	}
}

func TestCorruptVaultNeverOverwritten(t *testing.T) {
	e := newEnv(t)
	pass := e.WriteFile("pass", "pw\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	vaultFile := e.Path("state", "postern", "vault")
	b := mustRead(t, vaultFile)
	b[len(b)-5] ^= 0xff // damage the encrypted body
	os.WriteFile(vaultFile, b, 0o600)
	e.StartAgent()
	r := e.Run("postern", "unlock", "--passphrase-file", pass)
	if r.Code == 0 || !strings.Contains(r.Stderr, "corrupt") {
		t.Fatalf("unlock of a corrupt vault: %s", r)
	}
	k := e.Keygen("k", "ed25519", 0, "")
	if r := e.Run("postern", "vault", "add", "--passphrase-file", pass, k); r.Code == 0 {
		t.Fatal("added a key to a corrupt vault")
	}
	if got := mustRead(t, vaultFile); string(got) != string(b) {
		t.Fatal("the corrupt vault was rewritten")
	}
	if st := status(t, e); st.Vault.State != "locked" {
		t.Fatalf("status: %+v", st)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for i := 0; i < 1500; i++ {
		if cond() {
			return
		}
		sleep10ms()
	}
	t.Fatal("condition not reached in 15s")
}
