package getopt

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParse parses a command line, given as NUL-separated arguments,
// against ssh-agent's options and postern's long ones. What parses is
// written back in one canonical form (-cVALUE, --name=VALUE, "--", the
// operands), which must parse to the same options and operands; the
// operands are always the command line's last arguments.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"-Dd", "-t1h\x00-P/*\x00sh", "-t\x001h\x00--\x00-x", "--upstream\x00/run/x.sock\x00ssh", "--upstream=/s",
		"--upstream=", "--upstream\x00", "--ensure\x00-s", "--ensure=1", "-", "--", "-t", "-:", "-a\x00/tmp/s\x00--\x00--",
		"--unknown", "-c-s", "-E\x00md5\x00-k", "x\x00-d", "-t\x00\x00y", "--\x00", "---", "--=x",
	} {
		f.Add(s)
	}
	const spec = "cDdksE:a:P:t:O:"
	long := []string{"upstream=", "ensure", "foreground", "log-level="}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		opts, rest, err := Parse(args, spec, long...)
		if err != nil {
			if opts != nil || rest != nil {
				t.Fatalf("%q: an error (%v) with options %v and operands %q", args, err, opts, rest)
			}
			return
		}
		if len(rest) > len(args) || !slices.Equal(rest, args[len(args)-len(rest):]) {
			t.Fatalf("%q: operands %q are not the line's last arguments", args, rest)
		}
		var again []string
		for _, o := range opts {
			switch {
			case o.Name != 0 && o.Long != "":
				t.Fatalf("%q: option %+v both short and long", args, o)
			case o.Name != 0:
				k := strings.IndexByte(spec, o.Name)
				if k < 0 || o.Name == ':' {
					t.Fatalf("%q: option -%c is not in the spec", args, o.Name)
				}
				if takes := k+1 < len(spec) && spec[k+1] == ':'; takes && o.Value == "" {
					again = append(again, "-"+string(o.Name), "")
				} else {
					again = append(again, "-"+string(o.Name)+o.Value)
				}
			case o.Long != "":
				if o.Value == "" {
					again = append(again, "--"+o.Long)
				} else {
					again = append(again, "--"+o.Long+"="+o.Value)
				}
			default:
				t.Fatalf("%q: an option without a name: %+v", args, o)
			}
		}
		again = append(append(again, "--"), rest...)
		opts2, rest2, err := Parse(again, spec, long...)
		if err != nil || !slices.Equal(opts2, opts) || !slices.Equal(rest2, rest) {
			t.Fatalf("%q parsed to %v %q; written back as %q it parses to %v %q (%v)", args, opts, rest, again, opts2, rest2, err)
		}
	})
}

// FuzzLifetime checks Lifetime against its grammar: digits each followed
// by at most one unit, a bare number being seconds, and the sum of the
// terms, which must fit in an int32 of seconds.
func FuzzLifetime(f *testing.F) {
	for _, s := range []string{"600", "10m", "1h30m", "1w2d3h4m5s", "", "m", "1x", "2147483647", "2147483648", "99999999999999999999", "1W1D1H1M1S", "0", "1m1", "-1", "+1", "1 m", "596523h", "596524h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Lifetime(s)
		var want int64
		ok := s != ""
		for rest := s; ok && rest != ""; {
			i := 0
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				i++
			}
			if i == 0 {
				ok = false
				break
			}
			n, err := strconv.ParseInt(rest[:i], 10, 32)
			if err != nil {
				ok = false
				break
			}
			mult := int64(1)
			if i < len(rest) {
				switch m := strings.IndexByte("sSmMhHdDwW", rest[i]); m {
				case -1:
					ok = false
				default:
					mult = []int64{1, 60, 3600, 86400, 604800}[m/2]
				}
				i++
			}
			want += n * mult
			if want > 1<<31-1 {
				ok = false
			}
			rest = rest[i:]
		}
		switch {
		case ok && (err != nil || got != time.Duration(want)*time.Second):
			t.Fatalf("Lifetime(%q) = %v, %v; want %ds", s, got, err, want)
		case !ok && err == nil:
			t.Fatalf("Lifetime(%q) = %v, not an error", s, got)
		}
	})
}
