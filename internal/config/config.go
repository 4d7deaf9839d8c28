// Package config reads postern's configuration file,
// $XDG_CONFIG_HOME/postern/config.toml (or the file named by
// $POSTERN_CONFIG). The file is optional: without it every setting has a
// working default. Parsing is strict: an unknown key, a wrong type or a
// bad value is an error that names the file, and where possible the line.
//
// This package only reads and checks the file; the approvals package
// turns it into policy.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// File is the configuration as written.
type File struct {
	// Approval is the default approval mode: none, session, per-call or
	// deny. Default "session".
	Approval string `toml:"approval"`
	// CardTimeout is how long a request waits for an answer before it is
	// denied. Default 60s.
	CardTimeout Duration `toml:"card_timeout"`
	// KnownHosts lists the files whose names are given to verified host
	// keys. Default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts.
	KnownHosts []string `toml:"known_hosts"`
}

// Duration is a time.Duration written as a string such as "60s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", b)
	}
	d.Duration = v
	return nil
}

// Defaults returns the configuration used when no file exists.
func Defaults() File {
	return File{
		Approval:    "session",
		CardTimeout: Duration{60 * time.Second},
		KnownHosts:  []string{"~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"},
	}
}

// maxSize bounds the configuration file; anything larger is a mistake.
const maxSize = 1 << 20

// Load reads path. A missing file yields the defaults and no error.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Defaults(), nil
	}
	if err != nil {
		return File{}, err
	}
	return Parse(path, b)
}

// Parse parses the contents of a configuration file; name is used in
// error messages.
func Parse(name string, b []byte) (File, error) {
	if len(b) > maxSize {
		return File{}, fmt.Errorf("%s: file larger than %d bytes", name, maxSize)
	}
	f := Defaults()
	md, err := toml.Decode(string(b), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = pe.LastKey + ": " + msg
			}
			return File{}, fmt.Errorf("%s:%d: %s", name, pe.Position.Line, msg)
		}
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return File{}, fmt.Errorf("%s: unknown setting %s", name, strings.Join(keys, ", "))
	}
	if err := f.check(); err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

func (f *File) check() error {
	switch f.Approval {
	case "none", "session", "per-call", "deny":
	default:
		return fmt.Errorf("approval = %q: want none, session, per-call or deny", f.Approval)
	}
	if f.CardTimeout.Duration <= 0 {
		return errors.New("card_timeout must be positive")
	}
	return nil
}
