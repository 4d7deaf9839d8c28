package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

const completionUsage = `Usage: postern completion bash|zsh|fish

Print a completion script for the shell: commands, their subcommands and
flags. Load it with
    bash:  source <(postern completion bash)
    zsh:   postern completion zsh > "${fpath[1]}/_postern"
    fish:  postern completion fish > ~/.config/fish/completions/postern.fish
"make install" installs all three.
`

// completionFlags are the flags each command line takes, for completion:
// a command's own ("sessions"), or a subcommand's ("journal resolve"),
// whose second word completion offers after the command. A command that
// runs a subcommand by default has the flags of that one under its own
// name too ("journal" is "journal list"). Tests check them against the
// usage texts and the flags each command line parses.
var completionFlags = map[string]string{
	"activity":        "--since --run --json --offline --passphrase-file",
	"agent":           "-a -c -D -d -E -k -O -P -s -T -t -U --ensure --upstream",
	"approve":         "--list --json --once --session --subject --line --socket",
	"audit new":       "--passphrase-file",
	"audit show":      "--since --run --json --offline --passphrase-file",
	"audit verify":    "--json --pin --anchor --vault --passphrase-file",
	"check":           "--host --key --exe --forwarded --json --socket",
	"completion bash": "",
	"completion fish": "",
	"completion zsh":  "",
	"connect":         "--socket --fdpass",
	"deny":            "--socket",
	"doctor":          "--json --socket",
	"hosts add":       "--class --key-file --fingerprint --socket",
	"hosts import":    "--class --file --fingerprint --socket",
	"hosts list":      "--json --socket",
	"hosts remove":    "--socket",
	"journal":         "--status --limit --json --socket",
	"journal follow":  "--json --socket",
	"journal list":    "--status --limit --json --socket",
	"journal new":     "--socket",
	"journal resolve": "--ran --not-started --still-running --inconclusive --evidence --socket",
	"journal show":    "--json --socket",
	"lock":            "--socket",
	"revoke":          "--all --socket",
	"run":             "--label --no-sandbox --socket --",
	"sessions":        "--history --json --offline --passphrase-file --socket",
	"ssh-config":      "--socket",
	"status":          "--json --socket",
	"unlock":          "--passphrase-file --remember --keychain --forget --socket",
	"vault add":       "--comment --passphrase-file --socket",
	"vault init":      "--passphrase-file",
	"vault list":      "--json --offline --passphrase-file",
	"vault passwd":    "--passphrase-file --new-passphrase-file --socket",
	"vault remove":    "--passphrase-file --socket",
	"version":         "",
	"why":             "--json --socket",
}

// completionCommand is what completion offers for one command: its own
// flags, and its subcommands (in order) with theirs.
type completionCommand struct {
	flags string
	subs  []string
}

// completionCommands returns completionFlags by command, and the
// commands' names in order (a test checks that they are the commands
// there are).
func completionCommands() (map[string]*completionCommand, []string) {
	cmds := map[string]*completionCommand{}
	var names []string
	for form, flags := range completionFlags {
		name, sub, _ := strings.Cut(form, " ")
		c := cmds[name]
		if c == nil {
			c = &completionCommand{}
			cmds[name] = c
			names = append(names, name)
		}
		if sub == "" {
			c.flags = flags
		} else {
			c.subs = append(c.subs, sub)
		}
	}
	for _, c := range cmds {
		slices.Sort(c.subs)
	}
	slices.Sort(names)
	return cmds, names
}

// commandNames returns the commands completion offers.
func commandNames() []string {
	_, names := completionCommands()
	return names
}

// helpCommand is "postern help COMMAND": offered beside the commands,
// and followed by their names.
const helpCommand = "help"

// topFlags are the flags postern takes in place of a command.
var topFlags = []string{"--help", "--version"}

// firstNames are the words completion offers first: the commands, help,
// and the flags postern takes in place of a command.
func firstNames(names []string) string {
	all := append(slices.Clone(names), helpCommand)
	slices.Sort(all)
	return strings.Join(append(all, topFlags...), " ")
}

// firstWords are what completion offers right after a command: its
// subcommands, then its own flags.
func (c *completionCommand) firstWords() string {
	return strings.TrimSpace(strings.Join(c.subs, " ") + " " + c.flags)
}

func cmdCompletion(args []string, out, errw io.Writer) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		return &helpRequest{completionUsage}
	}
	if len(args) != 1 {
		return usagef("completion: name a shell: bash, zsh or fish")
	}
	cmds, names := completionCommands()
	switch args[0] {
	case "bash":
		fmt.Fprintf(out, "# bash completion for postern\n_postern() {\n")
		fmt.Fprintf(out, "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\"\" i\n")
		// After run's --, the words are the command's: a program, then
		// its arguments.
		fmt.Fprintf(out, "    if [ \"${COMP_WORDS[1]}\" = run ]; then\n        for ((i = 2; i < COMP_CWORD; i++)); do\n            [ \"${COMP_WORDS[i]}\" = -- ] || continue\n")
		fmt.Fprintf(out, "            if [ $((i + 1)) -eq \"$COMP_CWORD\" ]; then COMPREPLY=($(compgen -c -- \"$cur\" | sort -u)); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n            return 0\n        done\n    fi\n")
		fmt.Fprintf(out, "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n        words=%q\n    else\n        case \"${COMP_WORDS[1]}\" in\n", firstNames(names))
		fmt.Fprintf(out, "        %s) [ \"$COMP_CWORD\" -eq 2 ] && words=%q ;;\n", helpCommand, strings.Join(names, " "))
		for _, n := range names {
			c := cmds[n]
			if len(c.subs) == 0 {
				fmt.Fprintf(out, "        %s) words=%q ;;\n", n, c.flags)
				continue
			}
			fmt.Fprintf(out, "        %s)\n            if [ \"$COMP_CWORD\" -eq 2 ]; then words=%q\n            else case \"${COMP_WORDS[2]}\" in\n", n, c.firstWords())
			for _, sub := range c.subs {
				fmt.Fprintf(out, "                %s) words=%q ;;\n", sub, completionFlags[n+" "+sub])
			}
			fmt.Fprintf(out, "                *) words=%q ;;\n            esac; fi ;;\n", c.flags)
		}
		fmt.Fprintf(out, "        esac\n    fi\n")
		fmt.Fprintf(out, "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
		fmt.Fprintf(out, "    [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))\n    return 0\n}\ncomplete -F _postern postern\n")
	case "zsh":
		fmt.Fprintf(out, "#compdef postern\n# zsh completion for postern\n_postern() {\n    if (( CURRENT == 2 )); then\n        compadd -- %s\n        return\n    fi\n    case $words[2] in\n", firstNames(names))
		fmt.Fprintf(out, "        %s) (( CURRENT == 3 )) && compadd -- %s; return ;;\n", helpCommand, strings.Join(names, " "))
		for _, n := range names {
			c := cmds[n]
			if n == "run" {
				// After run's --, the words are a command line of their
				// own, completed as zsh completes one.
				fmt.Fprintf(out, "        run)\n            local i=${words[(i)--]}\n            if (( i < CURRENT )); then shift i words; (( CURRENT -= i )); _normal; return; fi\n            compadd -- %s ;;\n", c.flags)
				continue
			}
			if len(c.subs) == 0 {
				if c.flags != "" {
					fmt.Fprintf(out, "        %s) compadd -- %s ;;\n", n, c.flags)
				}
				continue
			}
			fmt.Fprintf(out, "        %s)\n            if (( CURRENT == 3 )); then compadd -- %s\n            else case $words[3] in\n", n, c.firstWords())
			for _, sub := range c.subs {
				if w := completionFlags[n+" "+sub]; w != "" {
					fmt.Fprintf(out, "                %s) compadd -- %s ;;\n", sub, w)
				}
			}
			if c.flags != "" {
				fmt.Fprintf(out, "                *) compadd -- %s ;;\n", c.flags)
			}
			fmt.Fprintf(out, "            esac; fi ;;\n")
		}
		fmt.Fprintf(out, "    esac\n    _files\n}\ncompdef _postern postern\n")
	case "fish":
		fmt.Fprintf(out, "# fish completion for postern\ncomplete -c postern -f -n __fish_use_subcommand -a %q\n", firstNames(names))
		fmt.Fprintf(out, "complete -c postern -f -n '__fish_seen_subcommand_from %s; and test (count (commandline -opc)) -eq 2' -a %q\n", helpCommand, strings.Join(names, " "))
		fishFlags(out, "__fish_use_subcommand", strings.Join(topFlags, " "))
		for _, n := range names {
			c := cmds[n]
			// The command's own words, while none of its subcommands is
			// on the line; then each subcommand's.
			cond := "__fish_seen_subcommand_from " + n
			if len(c.subs) > 0 {
				subs := strings.Join(c.subs, " ")
				cond += "; and not __fish_seen_subcommand_from " + subs
				fmt.Fprintf(out, "complete -c postern -f -n '%s' -a %q\n", cond, subs)
			}
			fishFlags(out, cond, c.flags)
			for _, sub := range c.subs {
				fishFlags(out, "__fish_seen_subcommand_from "+n+"; and __fish_seen_subcommand_from "+sub, completionFlags[n+" "+sub])
			}
		}
	default:
		return usagef("completion: unknown shell %q: bash, zsh or fish", args[0])
	}
	return nil
}

// fishFlags writes fish's completion of the flags in words, long (--json)
// and short (agent's -a), under the condition cond.
func fishFlags(out io.Writer, cond, words string) {
	for _, w := range strings.Fields(words) {
		switch {
		case strings.HasPrefix(w, "--") && len(w) > 2:
			fmt.Fprintf(out, "complete -c postern -n '%s' -l %s\n", cond, w[2:])
		case len(w) == 2 && w[0] == '-' && w[1] != '-':
			fmt.Fprintf(out, "complete -c postern -n '%s' -s %s\n", cond, w[1:])
		}
	}
}
