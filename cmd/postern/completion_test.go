package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
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
		{"postern journal --st", "--status"},
		{"postern journal show --j", "--json"},
		{"postern journal resolve --j", ""},
		{"postern journal resolve --ev", "--evidence"},
		{"postern audit new --j", ""},
		{"postern agent --en", "--ensure"},
		{"postern completion f", "fish"},
		// after run's --, the words are the command's: a program, then
		// its arguments, never postern's flags
		{"postern run --la", "--label"},
		{"postern run -- --la", ""},
		{"postern run --label x -- true --la", ""},
		{"postern run -- ssh-keyge", "ssh-keygen"},
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
		{"postern journal l", "list"},
		{"postern journal --st", "--status"},
		{"postern journal show --js", "--json"},
		{"postern journal resolve --js", ""},
		{"postern journal resolve --ev", "--evidence"},
		{"postern audit new --js", ""},
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

// Completion offers every flag the usage lines ("postern CMD [SUB] ...")
// of the commands' usage texts name for that command line.
func TestCompletionKnowsEveryFlag(t *testing.T) {
	for form, flags := range usageForms(t) {
		words, ok := completionFlags[form]
		if !ok {
			t.Errorf("completion has no entry for %q, a command line the usage texts show", form)
			continue
		}
		for _, f := range flags {
			if f != "--help" && !slices.Contains(strings.Fields(words), f) {
				t.Errorf("completion of %s does not offer %s, which its usage names", form, f)
			}
		}
	}
}

// Completion offers for each command line exactly the long flags that
// command line parses: none another subcommand of the same command
// takes, none missing.
func TestCompletionOffersTheFlagsEachCommandLineTakes(t *testing.T) {
	var made *flag.FlagSet
	flagSetMade = func(fs *flag.FlagSet) { made = fs }
	defer func() { flagSetMade = nil }()
	for form, words := range completionFlags {
		f := strings.Fields(form)
		if f[0] == "agent" || f[0] == "completion" {
			continue // ssh-agent's own flags, and no flags at all
		}
		made = nil
		var h *helpRequest
		if err := commands[f[0]](append(f[1:], "--help"), io.Discard, io.Discard); !errors.As(err, &h) || made == nil {
			t.Errorf("%s --help: %v, flag set %v", form, err, made)
			continue
		}
		var takes, offered []string
		made.VisitAll(func(fl *flag.Flag) {
			if fl.Name != "help" && fl.Name != "h" {
				takes = append(takes, "--"+fl.Name)
			}
		})
		for _, w := range strings.Fields(words) {
			if strings.HasPrefix(w, "--") && len(w) > 2 {
				offered = append(offered, w)
			}
		}
		slices.Sort(offered)
		if !slices.Equal(offered, takes) {
			t.Errorf("completion offers %v for %q, which takes %v", offered, form, takes)
		}
	}
}

// Every option agent takes (ssh-agent's, as agentSpec spells them, and
// its long ones) is offered after "postern agent -", in bash and in fish,
// and "help" is offered as a command, followed by the command it is for.
func TestCompletionOffersEveryWordTheCodeTakes(t *testing.T) {
	var opts []string
	for _, c := range strings.ReplaceAll(agentSpec, ":", "") {
		opts = append(opts, "-"+string(c))
	}
	opts = append(opts, "--ensure", "--upstream")
	bash := writeCompletion(t, "bash", "postern.bash")
	fish := writeCompletion(t, "fish", "postern.fish")
	complete := map[string]func(line string) []string{
		"bash": func(line string) []string {
			w := strings.Fields(line)
			cword := len(w) - 1
			if strings.HasSuffix(line, " ") {
				w = append(w, "''")
				cword++
			}
			prog := ". " + bash + "; COMP_WORDS=(" + strings.Join(w, " ") + "); COMP_CWORD=" + strconv.Itoa(cword) + "; _postern; printf '%s\\n' \"${COMPREPLY[@]}\""
			out, err := exec.Command("bash", "-c", prog).CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %q: %v %s", line, err, out)
			}
			return strings.Fields(string(out))
		},
		"fish": func(line string) []string {
			cmd := exec.Command("fish", "--no-config", "-c", "source "+fish+"; complete -C '"+line+"'")
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fish: %q: %v %s", line, err, out)
			}
			var words []string
			for l := range strings.Lines(string(out)) {
				w, _, _ := strings.Cut(strings.TrimSpace(l), "\t")
				words = append(words, w)
			}
			return words
		},
	}
	for shell, comp := range complete {
		got := comp("postern agent -")
		for _, o := range opts {
			if !slices.Contains(got, o) {
				t.Errorf("%s: postern agent - offers %q, not %s, which agent takes", shell, got, o)
			}
		}
		if got := comp("postern --ver"); !slices.Equal(got, []string{"--version"}) {
			t.Errorf("%s: postern --ver offers %q, want --version", shell, got)
		}
		if got := comp("postern --he"); !slices.Equal(got, []string{"--help"}) {
			t.Errorf("%s: postern --he offers %q, want --help", shell, got)
		}
		if got := comp("postern hel"); !slices.Equal(got, []string{"help"}) {
			t.Errorf("%s: postern hel offers %q, want help", shell, got)
		}
		if got := comp("postern help va"); !slices.Equal(got, []string{"vault"}) {
			t.Errorf("%s: postern help va offers %q, want vault", shell, got)
		}
	}
}

// The zsh script's choices, with compadd, _normal and _files standing in
// for zsh's own (so that no terminal is needed): after run's --, the
// words are handed to zsh as a command line of their own.
func TestZshCompletionChoices(t *testing.T) {
	f := writeCompletion(t, "zsh", "_postern")
	for _, c := range []struct{ words, want string }{
		{"postern run --l", "compadd --label --no-sandbox --socket --"},
		{"postern run --label x -- ssh -l", "normal 2 ssh -l"},
		{"postern run -- ssh", "normal 1 ssh"},
		{"postern help v", "compadd " + strings.Join(commandNames(), " ")},
	} {
		w := strings.Fields(c.words)
		prog := "compdef(){}; source " + f + "; compadd(){ print -r -- compadd ${@:2} }; _normal(){ print -r -- normal $CURRENT ${words[*]} }; _files(){}; " +
			"words=(" + c.words + "); CURRENT=" + strconv.Itoa(len(w)) + "; _postern"
		cmd := exec.Command("zsh", "-f", "-c", prog)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("zsh: %q completes to %q (%v), want %q", c.words, out, err, c.want)
		}
	}
}
