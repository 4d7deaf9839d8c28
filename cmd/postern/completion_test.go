package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every command is completed, and nothing else.
func TestCompletionKnowsEveryCommand(t *testing.T) {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	if got := commandNames(); !slices.Equal(got, names) {
		t.Fatalf("completion offers %v, the commands are %v", got, names)
	}
}

// The bash script, loaded into a real bash, completes commands and
// subcommands.
func TestBashCompletion(t *testing.T) {
	f := writeCompletion(t, "bash", "postern.bash")
	for _, c := range []struct{ words, want string }{
		{"postern va", "vault"},
		{"postern vault a", "add"},
		{"postern journal re", "resolve"},
		{"postern agent --en", "--ensure"},
		{"postern completion f", "fish"},
	} {
		w := strings.Fields(c.words)
		prog := ". " + f + "; COMP_WORDS=(" + c.words + "); COMP_CWORD=" + strconv.Itoa(len(w)-1) + "; _postern; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command("bash", "-c", prog).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("%q completes to %q (%v), want %q", c.words, out, err, c.want)
		}
	}
}

func writeCompletion(t *testing.T, shell, name string) string {
	t.Helper()
	var script bytes.Buffer
	if err := cmdCompletion([]string{shell}, &script, os.Stderr); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// The fish script, loaded into a real fish, completes command lines.
func TestFishCompletion(t *testing.T) {
	f := writeCompletion(t, "fish", "postern.fish")
	for _, c := range []struct{ line, want string }{
		{"postern va", "vault"},
		{"postern vault a", "add"},
		{"postern agent --ens", "--ensure"},
	} {
		cmd := exec.Command("fish", "--no-config", "-c", "source "+f+"; complete -C '"+c.line+"'")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("fish: %q completes to %q (%v), want %q", c.line, out, err, c.want)
		}
	}
}

// The zsh script loads into zsh's completion system and is registered
// for postern.
func TestZshCompletion(t *testing.T) {
	f := writeCompletion(t, "zsh", "_postern")
	cmd := exec.Command("zsh", "-f", "-c", "autoload -U compinit; compinit -u -D; source "+f+"; print -- $_comps[postern]")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_postern" {
		t.Fatalf("zsh: %q %v", out, err)
	}
}

// Completion offers every flag the usage lines ("postern CMD ...") of
// the commands' usage texts name for CMD.
func TestCompletionKnowsEveryFlag(t *testing.T) {
	for form, flags := range usageForms(t) {
		name := strings.Fields(form)[0]
		words, ok := completionWords[name]
		if !ok {
			continue
		}
		for _, f := range flags {
			if f != "--help" && !slices.Contains(strings.Fields(words), f) {
				t.Errorf("completion of %s does not offer %s, which its usage names", name, f)
			}
		}
	}
}
