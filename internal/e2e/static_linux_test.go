package e2e

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/internal/preloadtest"
)

// On Linux postern is one static program, as make build and make
// install build it and as the end-to-end tests do: no program
// interpreter, no shared library. Nothing of the C library is loaded
// into the process that holds the keys, whatever LD_PRELOAD or
// LD_LIBRARY_PATH the environment it starts from names, and its idle
// resident memory is 3 MiB smaller (BenchmarkIdleMemory).
func TestOneStaticProgram(t *testing.T) {
	if os.Getenv("POSTERN_E2E_RACE") != "" {
		t.Skip("POSTERN_E2E_RACE: the race detector's build of postern needs the C library")
	}
	e := newEnv(t)
	dest := e.Path("dest")
	makeInstall(t, e, "DESTDIR="+dest)
	for _, bin := range []string{posternBin, filepath.Join(dest, "usr/local/bin/postern")} {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a %v program header: it is linked dynamically", bin, p.Type)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
			t.Errorf("%s needs shared libraries %q (%v)", bin, libs, err)
		}
	}
}

// A run with the user's uid can name a library in LD_PRELOAD for the
// gateway's next start (systemctl --user set-environment, a shell's
// startup file): into a dynamically linked gateway the loader would put
// the run's code before postern's first instruction, before the process
// makes itself non-dumpable, and it would read the keys. The library
// here writes its process's pid to a file when loaded: a dynamically
// linked program started with it writes there (the test's own check that
// the library works), the gateway, holding a key and signing with it, does
// not.
func TestLDPreloadReachesNoGateway(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	lib := preloadtest.Build(t, e.Dir)
	e.Config("approval = \"none\"\n")
	e.Setenv("LD_PRELOAD", lib.Path)
	gw := e.StartAgent()
	e.Unsetenv("LD_PRELOAD")
	key := e.Keygen("k", "ed25519", 0, "")
	e.AddKey(key)
	msg := e.WriteFile("msg", "signed by a gateway started with LD_PRELOAD\n", 0o600)
	e.MustRun("ssh-keygen", "-Y", "sign", "-n", "file", "-f", key+".pub", msg)
	if lib.LoadedInto(gw.PID()) {
		t.Fatalf("the preloaded library ran in the gateway (pid %d)", gw.PID())
	}
	// Nor does it tell of a loader it was not started by.
	if st := e.MustRun("postern", "status", "--json").Stdout; strings.Contains(st, `"interpreter"`) {
		t.Errorf("the static gateway names a dynamic loader: %s", st)
	}
	if strings.Contains(gw.Log(), "linked dynamically") {
		t.Errorf("the static gateway warns of its loader:\n%s", gw.Log())
	}
}
