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

// subcommands and flags of each command, for completion.
var completionWords = map[string]string{
	"agent":      "-a -c -D -d -k -P -s -t --ensure --upstream",
	"run":        "--label --no-sandbox --socket --",
	"approve":    "--list --json --once --session --subject --line --socket",
	"deny":       "--socket",
	"sessions":   "--history --json --offline --passphrase-file --socket",
	"revoke":     "--all --socket",
	"audit":      "verify show new --json --pin --anchor --vault --since --run --offline --passphrase-file",
	"activity":   "--since --run --offline --json --passphrase-file",
	"journal":    "list show resolve follow new --json --status --limit --ran --not-started --still-running --inconclusive --evidence --socket",
	"connect":    "--socket --fdpass",
	"hosts":      "list add import remove --class --key-file --file --fingerprint --json --socket",
	"ssh-config": "--socket",
	"status":     "--json --socket",
	"lock":       "--socket",
	"unlock":     "--passphrase-file --remember --keychain --forget --socket",
	"vault":      "init add list remove passwd --passphrase-file --new-passphrase-file --comment --json --offline --socket",
	"why":        "--json --socket",
	"doctor":     "--json --socket",
	"check":      "--host --key --exe --forwarded --json --socket",
	"completion": "bash zsh fish",
	"version":    "",
}

// commandNames returns the commands completion offers (a test checks
// that they are the commands there are).
func commandNames() []string {
	var names []string
	for n := range completionWords {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func cmdCompletion(args []string, out, errw io.Writer) error {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		return &helpRequest{completionUsage}
	}
	if len(args) != 1 {
		return usagef("completion: name a shell: bash, zsh or fish")
	}
	names := commandNames()
	switch args[0] {
	case "bash":
		fmt.Fprintf(out, "# bash completion for postern\n_postern() {\n")
		fmt.Fprintf(out, "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" words=\"\"\n")
		fmt.Fprintf(out, "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n        words=%q\n    else\n        case \"${COMP_WORDS[1]}\" in\n", strings.Join(names, " "))
		for _, n := range names {
			fmt.Fprintf(out, "        %s) words=%q ;;\n", n, completionWords[n])
		}
		fmt.Fprintf(out, "        esac\n    fi\n")
		fmt.Fprintf(out, "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
		fmt.Fprintf(out, "    [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))\n    return 0\n}\ncomplete -F _postern postern\n")
	case "zsh":
		fmt.Fprintf(out, "#compdef postern\n# zsh completion for postern\n_postern() {\n    if (( CURRENT == 2 )); then\n        compadd -- %s\n        return\n    fi\n    case $words[2] in\n", strings.Join(names, " "))
		for _, n := range names {
			if w := completionWords[n]; w != "" {
				fmt.Fprintf(out, "        %s) compadd -- %s ;;\n", n, w)
			}
		}
		fmt.Fprintf(out, "    esac\n    _files\n}\ncompdef _postern postern\n")
	case "fish":
		fmt.Fprintf(out, "# fish completion for postern\ncomplete -c postern -f -n __fish_use_subcommand -a %q\n", strings.Join(names, " "))
		for _, n := range names {
			for _, w := range strings.Fields(completionWords[n]) {
				if strings.HasPrefix(w, "--") && len(w) > 2 {
					fmt.Fprintf(out, "complete -c postern -n '__fish_seen_subcommand_from %s' -l %s\n", n, w[2:])
				} else if !strings.HasPrefix(w, "-") {
					fmt.Fprintf(out, "complete -c postern -f -n '__fish_seen_subcommand_from %s' -a %s\n", n, w)
				}
			}
		}
	default:
		return usagef("completion: unknown shell %q: bash, zsh or fish", args[0])
	}
	return nil
}
