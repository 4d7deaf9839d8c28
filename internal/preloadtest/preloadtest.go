// Package preloadtest builds, for a test, the library a hostile run
// would name in LD_PRELOAD: loaded into a process, it appends the
// process's pid to a file. A test starts a program with it in the
// environment and asks whether it ran there.
package preloadtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const source = `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) {
	char line[32];
	int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0) return;
	snprintf(line, sizeof line, "%d\n", (int)getpid());
	write(fd, line, strlen(line));
	close(fd);
}
`

// A Lib is the library built, and the file it writes to.
type Lib struct {
	Path, marker string
}

// Build compiles the library in dir with gcc, and checks that it writes
// its pid when env(1) is started with it in LD_PRELOAD.
func Build(t testing.TB, dir string) Lib {
	t.Helper()
	l := Lib{Path: filepath.Join(dir, "preload.so"), marker: filepath.Join(dir, "preloaded")}
	src := filepath.Join(dir, "preload.c")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", fmt.Sprintf("-DMARKER=%q", l.marker), "-o", l.Path, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc (apt-get install gcc): %v\n%s", err, out)
	}
	env := exec.Command("env", "true")
	env.Env = append(os.Environ(), "LD_PRELOAD="+l.Path)
	if out, err := env.CombinedOutput(); err != nil {
		t.Fatalf("env true with the library preloaded: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(l.marker); err != nil || len(b) == 0 {
		t.Fatalf("the library wrote nothing when preloaded into env(1): %v", err)
	}
	os.Remove(l.marker)
	return l
}

// LoadedInto reports whether the library ran in the process pid.
func (l Lib) LoadedInto(pid int) bool {
	b, err := os.ReadFile(l.marker)
	return err == nil && strings.Contains("\n"+string(b), fmt.Sprintf("\n%d\n", pid))
}
