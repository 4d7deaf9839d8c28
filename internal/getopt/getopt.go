// Package getopt parses command lines the way OpenSSH's getopt(3) does,
// so that "postern agent" takes exactly the options ssh-agent takes:
// single-letter options that can be clustered (-Dd), values attached
// (-t1h, -P/*) or separate (-t 1h), "--" to end options, and parsing that
// stops at the first argument that is not an option. The standard flag
// package cannot do this.
package getopt

import (
	"fmt"
	"strings"
)

// Option is one parsed option.
type Option struct {
	Name  byte
	Value string // for options that take a value
}

// Error is a usage error: an unknown option or a missing value.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Parse parses args (without the program name) against spec, which lists
// the option letters, each followed by ':' when it takes a value, as in
// getopt(3). It returns the options in order and the remaining operands.
func Parse(args []string, spec string) ([]Option, []string, error) {
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
