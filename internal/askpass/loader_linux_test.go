package askpass

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/postern/postern/internal/preloadtest"
)

// The askpass program answers cards, and is pinned so that what runs is
// what was checked. A library named in LD_PRELOAD (or found through
// LD_LIBRARY_PATH) where the gateway started is no part of what was
// checked, and could be rewritten at any time after: it must not run in
// the program. The program here is a shell script, so a dynamic program
// (sh) runs it; the same script started with the library in its
// environment runs it (the test's own check).
func TestNoLoaderVariableReachesTheProgram(t *testing.T) {
	dir := t.TempDir()
	lib := preloadtest.Build(t, dir)
	pidFile, envFile := filepath.Join(dir, "pid"), filepath.Join(dir, "env")
	prog := filepath.Join(dir, "askpass")
	script := "#!/bin/sh\necho $$ > " + pidFile + "\nprintf '%s|%s|%s' \"$LD_PRELOAD\" \"$LD_LIBRARY_PATH\" \"$LD_AUDIT\" > " + envFile + "\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pid := func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	loaders := []string{"LD_PRELOAD=" + lib.Path, "LD_LIBRARY_PATH=" + dir, "LD_AUDIT=" + filepath.Join(dir, "audit.so")}

	direct := exec.Command(prog)
	direct.Env = append(os.Environ(), "LD_PRELOAD="+lib.Path)
	if out, err := direct.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !lib.LoadedInto(pid()) {
		t.Fatal("the library did not run in the script started with it in LD_PRELOAD")
	}

	env := append(Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force", "PATH=" + os.Getenv("PATH")}, loaders...)
	if ok, err := env.Confirm(context.Background(), "Allow use of key?"); err != nil || !ok {
		t.Fatalf("Confirm: %v, %v", ok, err)
	}
	if lib.LoadedInto(pid()) {
		t.Error("the library named in LD_PRELOAD ran in the askpass program")
	}
	if b, err := os.ReadFile(envFile); err != nil || string(b) != "||" {
		t.Errorf("the askpass program saw LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT = %q (%v)", b, err)
	}
}
