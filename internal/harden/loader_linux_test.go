package harden

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The loader a program names is read from its ELF headers: the system's
// sh names one, a Go program built without cgo none, and what is no ELF
// program is an error.
func TestInterpreter(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	if interp, err := Interpreter(sh); err != nil || !strings.Contains(filepath.Base(interp), "ld-") {
		t.Errorf("%s: %q, %v, want its dynamic loader", sh, interp, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	build := exec.Command("go", "build", "-o", static, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if interp, err := Interpreter(static); err != nil || interp != "" {
		t.Errorf("a static program: %q, %v, want none", interp, err)
	}
	if interp, err := Interpreter(src); err == nil {
		t.Errorf("a Go source file: %q, want an error", interp)
	}
	self, err := SelfInterpreter()
	if want, werr := Interpreter(os.Args[0]); err != nil || werr != nil || self != want {
		t.Errorf("SelfInterpreter: %q, %v; the test program's own: %q, %v", self, err, want, werr)
	}
}
