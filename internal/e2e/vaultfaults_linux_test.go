package e2e

// The vault's faults end to end: an older copy put back while no gateway
// ran, a save that fails, state on a read-only file system, files a crash
// left behind, the memory an unlock takes.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// vaultEnv makes a vault with one key, and audit log, in a fresh env.
func vaultEnv(t *testing.T) (*Env, string) {
	t.Helper()
	need(t, "ssh-keygen")
	e := newEnv(t)
	pass := e.WriteFile("pass", "vault pass\n", 0o600)
	e.MustRun("postern", "vault", "init", "--passphrase-file", pass)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, e.Keygen("first", "ed25519", 0, ""))
	return e, pass
}

// A vault put back to an older copy while the gateway was stopped (here:
// one without a key added since) is refused at the next unlock, and by
// the vault commands, with the way to accept it on purpose.
func TestVaultRollbackAcrossRestart(t *testing.T) {
	e, pass := vaultEnv(t)
	vault := e.Path("state", "postern", "vault")
	older := mustRead(t, vault)
	e.MustRun("postern", "vault", "add", "--passphrase-file", pass, e.Keygen("second", "ed25519", 0, ""))
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	a.Stop()
	if err := os.WriteFile(vault, older, 0o600); err != nil {
		t.Fatal(err)
	}
	e.StartAgent()
	r := e.Run("postern", "unlock", "--passphrase-file", pass)
	if r.Code != 1 || !strings.Contains(r.Stderr, "older copy") || !strings.Contains(r.Stderr, "postern: hint: ") {
		t.Fatalf("unlock of the older copy: %s", r)
	}
	if st := status(t, e); st.Vault.State != "locked" || st.Counts.Keys != 0 {
		t.Fatalf("after the refused unlock: %+v", st)
	}
	if r := e.Run("postern", "vault", "list", "--passphrase-file", pass); r.Code != 1 || !strings.Contains(r.Stderr, "older copy") {
		t.Fatalf("vault list of the older copy: %s", r)
	}
	// Restored on purpose: the anchor goes, the copy opens.
	os.Remove(vault + ".generation")
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
}

// bindReadOnly makes dir read-only for the rest of the test (a read-only
// bind mount over itself; root only).
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	needRoot(t, "to mount a read-only file system")
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("read-only remount: %v", err)
	}
}

// State on a read-only file system can still be read; a save that fails
// says so, and nothing claims a key was added.
func TestVaultOnReadOnlyState(t *testing.T) {
	e, pass := vaultEnv(t)
	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	a.Stop()
	bindReadOnly(t, e.Path("state", "postern"))
	for _, args := range [][]string{
		{"vault", "list", "--passphrase-file", pass},
		{"activity", "--passphrase-file", pass},
		{"audit", "show", "--passphrase-file", pass},
		{"audit", "verify"},
	} {
		e.MustRun("postern", args...)
	}
	r := e.Run("postern", "vault", "add", "--passphrase-file", pass, e.Keygen("third", "ed25519", 0, ""))
	if r.Code != 1 || strings.Contains(r.Stdout, "added") {
		t.Fatalf("vault add on a read-only file system: %s", r)
	}
}

// Temporary files an interrupted write left in the state directory are
// removed when the gateway starts, and reported; a fresh one (a write in
// progress) is kept.
func TestLeftoverTemporaryFilesRemoved(t *testing.T) {
	e, _ := vaultEnv(t)
	dir := e.Path("state", "postern")
	old := []string{".vault.1234.tmp", ".epoch.99.tmp"}
	for _, n := range old {
		p := filepath.Join(dir, n)
		os.WriteFile(p, []byte("half written"), 0o600)
		hour := time.Now().Add(-time.Hour)
		os.Chtimes(p, hour, hour)
	}
	fresh := filepath.Join(dir, ".vault.5678.tmp")
	os.WriteFile(fresh, []byte("being written"), 0o600)
	a := e.StartAgent()
	for _, n := range old {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s is still there", n)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a write in progress lost its file: %v", err)
	}
	if !strings.Contains(a.Log(), "removed temporary files") {
		t.Errorf("the removal was not reported:\n%s", a.Log())
	}
}

// An unlock's key derivation takes 64 MiB (the floor); the gateway gives
// it back as soon as the unlock is done.
func TestUnlockReturnsItsMemory(t *testing.T) {
	e, pass := vaultEnv(t)
	a := e.StartAgent()
	before := rss(t, a.PID())
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	after := rss(t, a.PID())
	t.Logf("resident memory: %d KiB before the unlock, %d KiB after", before, after)
	if after-before > 32<<10 {
		t.Fatalf("the unlock kept %d KiB", after-before)
	}
}

// fsImmutable is FS_IMMUTABLE_FL of <linux/fs.h>.
const fsImmutable = 0x10

// setImmutable sets or clears the immutable flag of the file at path
// (chattr +i): a rename over it fails, as a save of a file that cannot be
// replaced does, while the directory stays writable. Root only.
func setImmutable(t *testing.T, path string, on bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatalf("read the flags of %s: %v", path, err)
	}
	if on {
		flags |= fsImmutable
	} else {
		flags &^= fsImmutable
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
		t.Fatalf("set the flags of %s: %v", path, err)
	}
}

// A vault add whose save fails (the vault file cannot be replaced; its
// audit log can still be written) says so and claims nothing: no "added",
// with the gateway running or without one; the running agent does not
// offer the key, and the vault, its generation anchor included, is as it
// was.
func TestVaultAddWhoseSaveFails(t *testing.T) {
	e, pass := vaultEnv(t)
	needRoot(t, "to mount a tmpfs and make a file immutable")
	// The state on a tmpfs of the test's own, whatever file system holds
	// the temp dir.
	state := e.Path("state", "postern")
	saved := t.TempDir()
	copyGlob(t, filepath.Join(state, "*"), saved)
	if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(state, syscall.MNT_DETACH) })
	copyGlob(t, filepath.Join(saved, "*"), state)
	vaultFile := filepath.Join(state, "vault")
	third := e.Keygen("third", "ed25519", 0, "")

	setImmutable(t, vaultFile, true)
	t.Cleanup(func() { setImmutable(t, vaultFile, false) })
	r := e.Run("postern", "vault", "add", "--passphrase-file", pass, third)
	if r.Code != 1 || strings.Contains(r.Stdout, "added") || !strings.Contains(r.Stderr, "postern: error: ") {
		t.Fatalf("vault add with no gateway, its save failing: %s", r)
	}

	a := e.StartAgent()
	e.MustRun("postern", "unlock", "--passphrase-file", pass)
	r = e.Run("postern", "vault", "add", "--passphrase-file", pass, third)
	if r.Code != 1 || strings.Contains(r.Stdout, "added") || !strings.Contains(r.Stderr, "postern: error: ") {
		t.Fatalf("vault add through the gateway, its save failing: %s", r)
	}
	if l := e.MustRun("ssh-add", "-l").Stdout; strings.Count(strings.TrimSpace(l), "\n") != 0 || strings.Contains(l, "third") {
		t.Fatalf("the agent offers a key whose save failed:\n%s\n%s", l, tail(a.Log(), 2000))
	}
	setImmutable(t, vaultFile, false)
	e.MustRun("postern", "lock")
	e.MustRun("postern", "unlock", "--passphrase-file", pass) // the anchor did not move ahead of the file
	if l := e.MustRun("postern", "vault", "list", "--passphrase-file", pass).Stdout; strings.Contains(l, "third") {
		t.Fatalf("the vault holds the key whose save failed:\n%s", l)
	}
	// Once the file can be replaced again, the same add works.
	r = e.MustRun("postern", "vault", "add", "--passphrase-file", pass, third)
	if !strings.Contains(r.Stdout, "added ") {
		t.Fatalf("vault add once the file can be saved: %s", r)
	}
}
