package harden

import (
	"bytes"
	"debug/elf"
	"io"
)

// Interpreter returns the program interpreter (the dynamic loader) that
// the ELF program at path names, "" for a static program. A program
// with one is started by the loader, which first loads every library
// named in LD_PRELOAD and looks for libraries in LD_LIBRARY_PATH: code
// of whoever set the environment the program starts from runs in it
// before its first instruction, before Apply. postern is one static
// program on Linux as make builds it; go install, with a C compiler at
// hand, builds it dynamic.
func Interpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
		if err != nil {
			return "", err
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// LoaderVariables are the variables that tell the dynamic loader to load
// more than the program names.
var LoaderVariables = []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"}
