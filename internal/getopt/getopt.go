// Package getopt parses command lines the way OpenSSH's getopt(3) does,
// so that "postern agent" takes exactly the options ssh-agent takes:
// single-letter options that can be clustered (-Dd), values attached
// (-t1h, -P/*) or separate (-t 1h), "--" to end options, and parsing that
// stops at the first argument that is not an option. The standard flag
// package cannot do this. Long options (--upstream SOCKET,
// --upstream=SOCKET), which ssh-agent does not have, are the command's
// own additions.
package getopt

import (
	"fmt"
	"strings"
)

// Option is one parsed option.
type Option struct {
	Name  byte   // a single-letter option, or 0
	Long  string // a long option, without its dashes
	Value string // for options that take a value
}

// Error is a usage error: an unknown option or a missing value.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Parse parses args (without the program name) against spec, which lists
// the option letters, each followed by ':' when it takes a value, as in
// getopt(3), and long, the long options' names, each followed by '=' when
// it takes a value. It returns the options in order and the remaining
// operands.
func Parse(args []string, spec string, long ...string) ([]Option, []string, error) {
	var opts []Option
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if strings.HasPrefix(a, "--") {
			o, err := parseLong(a[2:], long, args[i+1:])
			if err != nil {
				return nil, nil, err
			}
			if o.Value != "" && !strings.Contains(a, "=") {
				i++
			}
			opts = append(opts, o)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			k := strings.IndexByte(spec, c)
			if c == ':' || k < 0 {
				return nil, nil, &Error{fmt.Sprintf("unknown option -- %c", c)}
			}
			if k+1 >= len(spec) || spec[k+1] != ':' {
				opts = append(opts, Option{Name: c})
				continue
			}
			switch {
			case j+1 < len(a):
				opts = append(opts, Option{Name: c, Value: a[j+1:]})
			case i+1 < len(args):
				i++
				opts = append(opts, Option{Name: c, Value: args[i]})
			default:
				return nil, nil, &Error{fmt.Sprintf("option requires an argument -- %c", c)}
			}
			break
		}
	}
	return opts, args[i:], nil
}

// parseLong parses the long option a (without its dashes), whose value
// is attached with '=' or is the next argument, the first of next.
func parseLong(a string, long []string, next []string) (Option, error) {
	name, value, attached := strings.Cut(a, "=")
	for _, l := range long {
		n, takes := strings.CutSuffix(l, "=")
		if n != name {
			continue
		}
		switch {
		case !takes && attached:
			return Option{}, &Error{fmt.Sprintf("option --%s takes no argument", name)}
		case !takes:
			return Option{Long: name}, nil
		case attached && value != "":
			return Option{Long: name, Value: value}, nil
		case !attached && len(next) > 0 && next[0] != "":
			return Option{Long: name, Value: next[0]}, nil
		}
		return Option{}, &Error{fmt.Sprintf("option --%s requires an argument", name)}
	}
	return Option{}, &Error{fmt.Sprintf("unknown option --%s", name)}
}
