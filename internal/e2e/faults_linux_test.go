package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A full disk: the audit log cannot be written, so every signature is
// refused (fail closed) and status says why; once space is freed the
// gateway opens the log again by itself, records how many events it
// refused, and signing resumes. The state directory is a small tmpfs.
func TestFullDiskAuditResumes(t *testing.T) {
	need(t, "ssh-keygen")
	needRoot(t, "to mount a tmpfs")
	e := newEnv(t)
	state := e.Path("state")
	if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=4m,mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(state, syscall.MNT_DETACH) })
	e.Config(`approval = "none"`)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	k := e.Keygen("k", "ed25519", 0, "")
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, k)
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	msg := e.WriteFile("m", "x", 0o600)
	sign := func() Result {
		os.Remove(msg + ".sig")
		return e.Run("ssh-keygen", "-Y", "sign", "-n", "file", "-f", k+".pub", msg)
	}
	if r := sign(); r.Code != 0 {
		t.Fatalf("signing before the disk is full: %s", r)
	}

	filler := filepath.Join(state, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	// A checkpoint moves the signing key file on: with no space, the log
	// fails.
	e.MustRun("postern", "lock")
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if r := sign(); r.Code == 0 {
		t.Fatalf("signed with an audit log that cannot be written:\n%s", tail(a.Log(), 2000))
	}
	st := e.MustRun("postern", "status").Stdout
	if !strings.Contains(st, "FAILING since") || !strings.Contains(st, "every action is refused") {
		t.Fatalf("status with a full disk:\n%s", st)
	}
	// postern why tells the refused requester, not that it was allowed.
	why := e.MustRun("postern", "why").Stdout
	if !strings.Contains(why, "DENIED audit_failed") || !strings.Contains(why, "the audit log cannot be written since") {
		t.Fatalf("why with a full disk:\n%s", why)
	}

	os.Remove(filler)
	for i := 0; ; i++ {
		if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "FAILING") {
			break
		}
		if i == 600 {
			t.Fatalf("the audit log never came back:\n%s", tail(a.Log(), 3000))
		}
		sleep10ms()
	}
	if r := sign(); r.Code != 0 {
		t.Fatalf("signing once the log is writable again: %s", r)
	}
	a.Stop()
	e.MustRun("postern", "audit", "verify")
	show := e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", pass).Stdout
	if !strings.Contains(show, `"type":"audit_resumed"`) {
		t.Fatalf("no audit_resumed event:\n%s", show)
	}
}
