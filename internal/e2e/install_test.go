package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeInstall runs make install, with args (PREFIX=…, DESTDIR=…), from a
// copy of the repository, with the go command's caches of the person who
// runs the tests.
func makeInstall(t *testing.T, e *Env, args ...string) {
	t.Helper()
	need(t, "make", "go")
	keepRepoBin(t)
	repo := repoCopy(t)
	install := e.Command("make", append([]string{"-s", "-C", repo, "install"}, args...)...)
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		install.Env = append(install.Env, k+"="+strings.TrimSpace(string(out)))
	}
	if r := e.finish(install, ""); r.Code != 0 {
		t.Fatalf("make install: %s", r)
	}
}

// make install with its default PREFIX (/usr/local) puts each shell's
// completion where that shell looks for it without being told: zsh in a
// directory of its own fpath, fish and bash (bash-completion) under
// $XDG_DATA_DIRS at its default; and each loads there and completes.
func TestInstalledCompletionsAreFound(t *testing.T) {
	need(t, "bash", "zsh", "fish")
	e := newEnv(t)
	dest := e.Path("dest")
	makeInstall(t, e, "DESTDIR="+dest)
	var installed []string
	filepath.WalkDir(filepath.Join(dest, "usr", "local", "share"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "completion") || strings.HasSuffix(p, "/_postern") {
			installed = append(installed, strings.TrimPrefix(p, dest))
		}
		return nil
	})

	// zsh: the directories of its own fpath, as compiled in (zsh -f).
	r := e.Run("zsh", "-fc", `print -l -- $fpath`)
	if r.Code != 0 {
		t.Fatalf("zsh: %s", r)
	}
	var dir string
	for _, d := range strings.Fields(r.Stdout) {
		if _, err := os.Stat(filepath.Join(dest, d, "_postern")); err == nil {
			dir = d
		}
	}
	if dir == "" {
		t.Errorf("make install put the zsh completion in no directory of zsh's fpath: installed %q; zsh's fpath:\n%s", installed, r.Stdout)
	} else {
		r := e.Run("zsh", "-fc", `fpath=(`+filepath.Join(dest, dir)+` $fpath); autoload -Uz compinit; compinit -u -d `+e.Path("zcompdump")+`; print -r -- $_comps[postern]`)
		if r.Code != 0 || r.Stderr != "" || strings.TrimSpace(r.Stdout) != "_postern" {
			t.Errorf("zsh did not load the installed completion for postern: %s", r)
		}
	}

	// fish, with $XDG_DATA_DIRS at its default (/usr/local/share:/usr/share)
	// and the installed postern on PATH.
	e.Setenv("XDG_DATA_DIRS", filepath.Join(dest, "usr/local/share")+":/usr/share")
	e.Setenv("PATH", filepath.Join(dest, "usr/local/bin")+":"+e.Getenv("PATH"))
	r = e.Run("fish", "-c", `complete -C 'postern sta'`)
	if r.Code != 0 || r.Stderr != "" || strings.TrimSpace(r.Stdout) != "status" {
		t.Errorf("fish did not complete \"postern sta\" from the installed completion: %s", r)
	}

	// bash: bash-completion loads completions/postern from each
	// directory of $XDG_DATA_DIRS/bash-completion.
	bash := filepath.Join(dest, "usr/local/share/bash-completion/completions/postern")
	r = e.Run("bash", "--norc", "--noprofile", "-c", `. `+bash+` && COMP_WORDS=(postern sta) COMP_CWORD=1 && _postern && echo "${COMPREPLY[*]}"`)
	if r.Code != 0 || r.Stderr != "" || strings.TrimSpace(r.Stdout) != "status" {
		t.Errorf("bash did not complete \"postern sta\" from %s: %s", bash, r)
	}
}
