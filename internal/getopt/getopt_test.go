package getopt

import (
	"reflect"
	"testing"
	"time"
)

const agentSpec = "cDdksE:a:O:P:t:"

func TestParse(t *testing.T) {
	tests := []struct {
		args []string
		opts []Option
		rest []string
		err  bool
	}{
		{[]string{"-Dd"}, []Option{{Name: 'D'}, {Name: 'd'}}, []string{}, false},
		{[]string{"-t1h", "-a", "/tmp/s"}, []Option{{Name: 't', Value: "1h"}, {Name: 'a', Value: "/tmp/s"}}, []string{}, false},
		{[]string{"-P/*", "-E", "md5"}, []Option{{Name: 'P', Value: "/*"}, {Name: 'E', Value: "md5"}}, []string{}, false},
		{[]string{"-st", "60", "cmd", "-D"}, []Option{{Name: 's'}, {Name: 't', Value: "60"}}, []string{"cmd", "-D"}, false},
		{[]string{"--", "-D"}, nil, []string{"-D"}, false},
		{[]string{"-", "x"}, nil, []string{"-", "x"}, false},
		{[]string{"-x"}, nil, nil, true},
		{[]string{"-t"}, nil, nil, true},
		{[]string{"-D", "sh", "-c", "true"}, []Option{{Name: 'D'}}, []string{"sh", "-c", "true"}, false},
		// Long options.
		{[]string{"--upstream", "/u", "-D"}, []Option{{Long: "upstream", Value: "/u"}, {Name: 'D'}}, []string{}, false},
		{[]string{"-D", "--upstream=/u", "cmd"}, []Option{{Name: 'D'}, {Long: "upstream", Value: "/u"}}, []string{"cmd"}, false},
		{[]string{"--upstream"}, nil, nil, true},
		{[]string{"--upstream="}, nil, nil, true},
		{[]string{"--upstream", ""}, nil, nil, true},
		{[]string{"--upstreams", "/u"}, nil, nil, true},
		{[]string{"--flag=x"}, nil, nil, true},
		{[]string{"--flag", "x"}, []Option{{Long: "flag"}}, []string{"x"}, false},
		{[]string{"sh", "--upstream", "/u"}, nil, []string{"sh", "--upstream", "/u"}, false},
	}
	for _, tt := range tests {
		opts, rest, err := Parse(tt.args, agentSpec, "upstream=", "flag")
		if (err != nil) != tt.err {
			t.Errorf("Parse(%q) err = %v", tt.args, err)
			continue
		}
		if tt.err {
			continue
		}
		if !reflect.DeepEqual(opts, tt.opts) || !reflect.DeepEqual(rest, tt.rest) {
			t.Errorf("Parse(%q) = %v %q, want %v %q", tt.args, opts, rest, tt.opts, tt.rest)
		}
	}
}

func TestLifetime(t *testing.T) {
	good := map[string]time.Duration{
		"1": time.Second, "600": 10 * time.Minute, "10m": 10 * time.Minute,
		"1h30m": 90 * time.Minute, "1w": 7 * 24 * time.Hour, "2d3s": 48*time.Hour + 3*time.Second,
	}
	for in, want := range good {
		if got, err := Lifetime(in); err != nil || got != want {
			t.Errorf("Lifetime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "h", "1x", "-1", "99999999999", "1h-", "3000000000s"} {
		if _, err := Lifetime(bad); err == nil {
			t.Errorf("Lifetime(%q) succeeded", bad)
		}
	}
}
