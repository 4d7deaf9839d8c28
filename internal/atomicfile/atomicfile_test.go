package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "two" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%q %v", b, fi.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if err := Write(filepath.Join(p, "not-a-dir", "x"), nil, 0o600); err == nil {
		t.Fatal("write under a file succeeded")
	}
}

// TestCrashBeforeRename stops a write where a crash would: the temporary
// file is complete, carries a recognisable name and the final mode, and
// the target still holds the old data.
func TestCrashBeforeRename(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "epoch")
	if err := Write(p, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("simulated crash")
	var seen string
	restore := SetBeforeRenameForTest(func(tmp string) error {
		seen = tmp
		b, err := os.ReadFile(tmp)
		fi, _ := os.Stat(tmp)
		if err != nil || string(b) != "2\n" || fi.Mode().Perm() != 0o600 {
			t.Errorf("temporary file: %q %v %v", b, fi.Mode(), err)
		}
		if after, _ := os.ReadFile(p); string(after) != "1\n" {
			t.Errorf("target changed before the rename: %q", after)
		}
		return crash
	})
	err := Write(p, []byte("2\n"), 0o600)
	restore()
	if !errors.Is(err, crash) {
		t.Fatalf("Write: %v", err)
	}
	if filepath.Dir(seen) != dir || !strings.HasPrefix(filepath.Base(seen), ".epoch.") || !IsTemp(filepath.Base(seen)) {
		t.Fatalf("temporary file %s is not recognisable", seen)
	}
	if _, err := os.Stat(seen); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left after a failed write: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1\n" {
		t.Fatalf("target %q after a failed write", b)
	}
	if err := Write(p, []byte("3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".vault.123456.tmp":  true,
		".known_hosts.9.tmp": true,
		".a.b.c.1.tmp":       true,
		"vault":              false,
		".vault.tmp":         false,
		".vault..tmp":        false,
		"vault.1.tmp":        false,
		".vault.1.tmp~":      false,
		"..1.tmp":            false,
	} {
		if IsTemp(name) != want {
			t.Errorf("IsTemp(%q) = %v", name, !want)
		}
	}
}

func TestNotDurable(t *testing.T) {
	err := error(&notDurableError{path: "/s/vault", err: errors.New("EIO")})
	if !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "/s/vault was written") {
		t.Fatal(err)
	}
}
