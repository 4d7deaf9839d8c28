package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDisk is a gateway, unlocked, with a vault key and its state on a
// small tmpfs of the test's own that fill makes full.
type fullDisk struct {
	e     *Env
	agent *Agent
	pass  string
	sign  func() Result // one signature with the vault key
	state string
}

func newFullDisk(t *testing.T) *fullDisk {
	t.Helper()
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
	return &fullDisk{e: e, agent: a, pass: pass, sign: sign, state: state}
}

// fill takes the tmpfs's last byte.
func (w *fullDisk) fill() {
	f, err := os.Create(filepath.Join(w.state, "filler"))
	if err != nil {
		w.e.t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// free gives the space back.
func (w *fullDisk) free() { os.Remove(filepath.Join(w.state, "filler")) }

// A full disk: the audit log cannot be written, so every signature is
// refused (fail closed) and status says why; once space is freed the
// gateway opens the log again by itself, records how many events it
// refused, and signing resumes. The state directory is a small tmpfs.
func TestFullDiskAuditResumes(t *testing.T) {
	w := newFullDisk(t)
	e, a, pass, sign := w.e, w.agent, w.pass, w.sign
	if r := sign(); r.Code != 0 {
		t.Fatalf("signing before the disk is full: %s", r)
	}

	e.MustRun("postern", "lock")
	w.fill()
	// The unlock is recorded (the log's file has room for records); its
	// checkpoint moves the signing key file on: with no space, the log
	// fails.
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

	// A lock happens whether or not the log records it; an unlock the
	// log cannot record does not stand.
	e.MustRun("postern", "lock")
	if r := e.Run("postern", "unlock", "--passphrase-file", pass); r.Code == 0 || !strings.Contains(r.Stderr, "the vault was locked again") || !strings.Contains(r.Stderr, "could not record it") {
		t.Fatalf("an unlock while the audit log cannot be written: %s", r)
	}
	if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "vault     locked") {
		t.Fatalf("status after an unlock the log could not record:\n%s", st)
	}

	w.free()
	for i := 0; ; i++ {
		if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "FAILING") {
			break
		}
		if i == 600 {
			t.Fatalf("the audit log never came back:\n%s", tail(a.Log(), 3000))
		}
		sleep10ms()
	}
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
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

// A full disk is easy to bring about, and while the log fails the gateway
// opens it again and again: an older copy of the log (with its key file
// and anchor) put in its place meanwhile is not taken up. The log stays
// refused, status says why, and nothing is signed.
func TestFullDiskOlderCopyNotResumed(t *testing.T) {
	w := newFullDisk(t)
	e, a, pass, sign := w.e, w.agent, w.pass, w.sign
	dir := e.Path("state", "postern")
	old := t.TempDir()
	for _, f := range []string{"audit.log*", "audit.key", "audit.anchor"} {
		copyGlob(t, filepath.Join(dir, f), old)
	}
	for range 3 {
		if r := sign(); r.Code != 0 {
			t.Fatalf("signing: %s", r)
		}
	}
	e.MustRun("postern", "lock") // a checkpoint: anchors past the copy
	e.MustRun("postern", "unlock", "--passphrase-file", pass)

	e.MustRun("postern", "lock")
	w.fill()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	if r := sign(); r.Code == 0 {
		t.Fatalf("signed with an audit log that cannot be written:\n%s", tail(a.Log(), 2000))
	}
	// The older copy put in place, then the space freed.
	for _, f := range []string{"audit.log*", "audit.key", "audit.anchor"} {
		ms, _ := filepath.Glob(filepath.Join(dir, f))
		for _, m := range ms {
			os.Remove(m)
		}
	}
	w.free()
	for _, f := range []string{"audit.log*", "audit.key", "audit.anchor"} {
		copyGlob(t, filepath.Join(old, f), dir)
	}
	for i := 0; ; i++ {
		if st := e.MustRun("postern", "status").Stdout; strings.Contains(st, "older copy") {
			break
		} else if i == 3000 {
			t.Fatalf("status never said the log is an older copy:\n%s\n%s", st, tail(a.Log(), 3000))
		}
		sleep10ms()
	}
	if r := sign(); r.Code == 0 {
		t.Fatalf("signed over an older copy of the audit log:\n%s", tail(a.Log(), 2000))
	}
	if st := e.MustRun("postern", "status").Stdout; !strings.Contains(st, "FAILING since") {
		t.Fatalf("status over the older copy:\n%s", st)
	}
}
