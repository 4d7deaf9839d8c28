// Package xdg locates postern's files the way the XDG Base Directory
// specification asks:
//
//	config   $XDG_CONFIG_HOME/postern/config.toml  (or $POSTERN_CONFIG)
//	state    $XDG_STATE_HOME/postern/               (the files named in state.go)
//	runtime  $XDG_RUNTIME_DIR/postern/              (the well-known agent socket)
//
// Unset variables fall back to the specification's defaults under $HOME
// ($HOME/.config, $HOME/.local/state). There is no default runtime
// directory: without $XDG_RUNTIME_DIR, RuntimeDir reports an error, and
// the well-known agent socket (AgentSocket) lives in the state directory.
package xdg

import (
	"errors"
	"os"
	"path/filepath"
)

// App is the directory name used under every XDG base directory.
const App = "postern"

func home() (string, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("cannot locate the home directory; set $HOME or the XDG variables")
	}
	return h, nil
}

func base(env string, fallback ...string) (string, error) {
	if d := os.Getenv(env); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, App), nil
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	return filepath.Join(append(append([]string{h}, fallback...), App)...), nil
}

// ConfigFile returns the path of the configuration file: $POSTERN_CONFIG
// when set, else $XDG_CONFIG_HOME/postern/config.toml.
func ConfigFile() (string, error) {
	if f := os.Getenv("POSTERN_CONFIG"); f != "" {
		return f, nil
	}
	d, err := base("XDG_CONFIG_HOME", ".config")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "config.toml"), nil
}

// StateDir returns $XDG_STATE_HOME/postern, where the vault, the audit log
// and the command journal live.
func StateDir() (string, error) {
	return base("XDG_STATE_HOME", ".local", "state")
}

// StateFile returns the path of name inside StateDir.
func StateFile(name string) (string, error) {
	d, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// RuntimeDir returns $XDG_RUNTIME_DIR/postern.
func RuntimeDir() (string, error) {
	d := os.Getenv("XDG_RUNTIME_DIR")
	if d == "" || !filepath.IsAbs(d) {
		return "", errors.New("$XDG_RUNTIME_DIR is not set")
	}
	return filepath.Join(d, App), nil
}

// AgentSocketFile is the name of the well-known agent socket.
const AgentSocketFile = "agent.sock"

// AgentSocket returns the well-known agent socket: agent.sock in
// RuntimeDir, or, without $XDG_RUNTIME_DIR, in StateDir (as gpg-agent
// keeps its sockets in ~/.gnupg where there is no /run/user).
func AgentSocket() (string, error) {
	d, err := RuntimeDir()
	if err != nil {
		if d, err = StateDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(d, AgentSocketFile), nil
}

// EnsureDir creates dir (and its parents) with mode 0700 if it does not
// exist, and tightens an existing dir that others may enter to 0700. A
// dir that is already private is left alone, so that reading state on a
// read-only file system needs no write.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(dir, 0o700)
}
