package safesocket

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	p := filepath.Join(dir, "agent.sock")
	l, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	di, _ := os.Stat(dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("socket %v, dir %v", fi.Mode(), di.Mode())
	}
	// A live socket is never replaced.
	if _, err := Listen(p); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}
	// A stale one (nothing listens) is.
	l.SetUnlinkOnClose(false)
	l.Close()
	l2, err := Listen(p)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	l2.Close()
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("Close did not remove the socket")
	}
	// A regular file is not a socket to replace.
	os.WriteFile(p, []byte("precious"), 0o600)
	if _, err := Listen(p); err == nil {
		t.Fatal("replaced a regular file")
	}
	if b, _ := os.ReadFile(p); string(b) != "precious" {
		t.Fatal("file changed")
	}
	if _, err := Listen("/tmp/" + strings.Repeat("x", 120)); err == nil {
		t.Fatal("over-long path accepted")
	}
}

func TestCheckDir(t *testing.T) {
	d := t.TempDir()
	os.Chmod(d, 0o700)
	if err := CheckDir(d); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	if err := CheckDir(d); err == nil {
		t.Fatal("0755 directory not reported")
	}
}
