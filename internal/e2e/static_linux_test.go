package e2e

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
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
