package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSession(t *testing.T) {
	var s Spec
	s.Session([]string{"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1000", "TMUX_TMPDIR=/var/tmux",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/var/bus/socket,guid=1;unix:abstract=/tmp/dbus-x", "SCREENDIR=relative"})
	for _, want := range []string{"/run/user/1000", fmt.Sprintf("/run/user/%d", os.Getuid()), "/var/tmux", "/var/bus/socket", "/run/screen", "/home/u/.screen", "/home/u/.ssh"} {
		if !slices.Contains(s.Hide, want) {
			t.Errorf("%s not hidden: %q", want, s.Hide)
		}
	}
	if slices.Contains(s.Hide, "relative") {
		t.Errorf("a relative path was hidden: %q", s.Hide)
	}
	for _, want := range []string{"/home/u/.ssh/known_hosts", "/home/u/.ssh/config"} {
		if !slices.Contains(s.ReadOnly, want) {
			t.Errorf("%s not read-only: %q", want, s.ReadOnly)
		}
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{
		{}:                              "unconfined",
		{Namespaces: true}:              "confined: namespaces, no Landlock (abstract unix sockets, such as X11's, reachable)",
		{Namespaces: true, Landlock: 5}: "confined: namespaces, Landlock ABI 5 (abstract unix sockets, such as X11's, reachable)",
		{Namespaces: true, Landlock: 6}: "confined: namespaces, Landlock ABI 6",
		{Namespaces: true, Landlock: 7}: "confined: namespaces, Landlock ABI 7",
		{Namespaces: true, Landlock: 7, NoSeccomp: true}:      "confined: namespaces, Landlock ABI 7, no seccomp filter (the person's keyring reachable, and TIOCSTI where the kernel allows it)",
		{Namespaces: true, Landlock: 7, SharedTerminal: true}: "confined: namespaces, Landlock ABI 7, sharing the terminal it was started from (no terminal of its own could be made: it can read that terminal and type into it)",
	} {
		if l.String() != want {
			t.Errorf("%+v: %q, want %q", l, l, want)
		}
	}
}

// A run may not start where it would write the home directory (the
// shell's start-up files run outside every run) or show a hidden tree
// again.
func TestCheck(t *testing.T) {
	env := []string{"HOME=/home/u"}
	for _, c := range []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"a project", Spec{Dir: "/home/u/src/p", Env: env, Hide: []string{"/run/user/1000"}}, true},
		{"the home directory", Spec{Dir: "/home/u", Env: env}, false},
		{"above the home directory", Spec{Dir: "/home", Env: env}, false},
		{"the root", Spec{Dir: "/", Env: env}, false},
		{"inside a hidden tree", Spec{Dir: "/run/user/1000/keyring", Env: env, Hide: []string{"/run/user/1000"}}, false},
		{"a hidden tree", Spec{Dir: "/home/u/.gnupg", Env: env, Hide: []string{"/home/u/.gnupg"}}, false},
		{"the private /tmp", Spec{Dir: "/tmp", Env: env}, false},
		{"inside /tmp", Spec{Dir: "/tmp/build", Env: env}, true},
		{"read_write holding the home directory", Spec{Dir: "/home/u/src/p", Env: env, ReadWrite: []string{"/home"}}, false},
		{"read_write inside the home directory", Spec{Dir: "/home/u/src/p", Env: env, ReadWrite: []string{"/home/u/.cache"}}, true},
		// ~/.config holds systemd's user units, the desktop's autostart
		// entries and environment.d; ~/.local/share systemd's too.
		{"~/.config", Spec{Dir: "/home/u/.config", Env: env}, false},
		{"a project in ~/.config", Spec{Dir: "/home/u/.config/nvim", Env: env}, true},
		{"~/.local", Spec{Dir: "/home/u/.local", Env: env}, false},
		{"~/.config with XDG_CONFIG_HOME elsewhere", Spec{Dir: "/home/u/.config", Env: append(env, "XDG_CONFIG_HOME=/home/u/conf")}, false},
		{"read_write holding ~/.config", Spec{Dir: "/home/u/src/p", Env: env, ReadWrite: []string{"/home/u/.config"}}, false},
		// Nor inside the trees there whose files run outside every run,
		// the reason ~/.config is refused.
		{"~/.config/systemd/user", Spec{Dir: "/home/u/.config/systemd/user", Env: env}, false},
		{"~/.config/autostart", Spec{Dir: "/home/u/.config/autostart", Env: env}, false},
		{"~/.config/environment.d", Spec{Dir: "/home/u/.config/environment.d", Env: env}, false},
		{"~/.config/git", Spec{Dir: "/home/u/.config/git", Env: env}, false},
		{"~/.local/share/systemd/user", Spec{Dir: "/home/u/.local/share/systemd/user", Env: env}, false},
		{"read_write inside ~/.config/systemd", Spec{Dir: "/home/u/src/p", Env: env, ReadWrite: []string{"/home/u/.config/systemd/user"}}, false},
		{"a project beside them", Spec{Dir: "/home/u/.config/systemd-notes", Env: env}, true},
	} {
		if err := c.spec.Check(); (err == nil) != c.ok {
			t.Errorf("%s: Check() = %v", c.name, err)
		}
	}
}

// The files ~/.ssh/config includes inside the working directory are
// shown read-only, a named one made empty first where missing, and so
// are those they include and the directory a pattern matches in; others
// are left alone.
func TestSSHIncludes(t *testing.T) {
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	mkdirs(t, "", filepath.Join(home, ".ssh", "conf.d"), filepath.Join(work, "ssh"))
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte("# Include "+work+"/commented\nHost x\n  Include conf.d/* ~/other\ninclude="+work+"/missing "+work+"/ssh/*.conf\n"), 0o600)
	os.WriteFile(filepath.Join(work, "ssh", "1.conf"), []byte("Include "+work+"/deeper \""+work+"/my dir/conf\" "+work+"/a\\ b # "+work+"/comment\n"), 0o600)
	s := &Spec{Dir: work}
	if err := s.SSHIncludes([]string{"HOME=" + home}); err != nil {
		t.Fatal(err)
	}
	// A pattern's directory, where a new file would match it; paths
	// quoted or escaped as ssh reads them.
	want := []string{filepath.Join(work, "missing"), filepath.Join(work, "ssh"), filepath.Join(work, "deeper"), filepath.Join(work, "my dir", "conf"), filepath.Join(work, "a b")}
	if !slices.Equal(s.ReadOnly, want) {
		t.Fatalf("read-only %q, want %q", s.ReadOnly, want)
	}
	if _, err := os.Stat(want[0]); err != nil {
		t.Errorf("the missing include was not made: %v", err)
	}
}

// A pattern ~/.ssh/config includes in the working directory itself
// cannot be kept from the run's new files: the run is refused.
func TestSSHIncludesPatternInTheWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	mkdirs(t, "", filepath.Join(home, ".ssh"), work)
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte("Include "+work+"/*.ssh\n"), 0o600)
	s := &Spec{Dir: work}
	if err := s.SSHIncludes([]string{"HOME=" + home}); err == nil || !strings.Contains(err.Error(), "start it from another directory") {
		t.Fatalf("a pattern in the working directory: %v, read-only %q", err, s.ReadOnly)
	}
}

// FuzzSSHConfigArgs splits the arguments of an ssh_config line (an
// Include names the files a run must not write). Words without quotes,
// escapes or comments are split at spaces and tabs; each word split,
// written back in double quotes, splits to itself.
func FuzzSSHConfigArgs(f *testing.F) {
	for _, s := range []string{`~/.ssh/config.d/*`, `"/home/u/my dir/conf" other`, `a\ b 'c d' "e\"f" g\\h # comment`, `x#y "#" #`,
		`"open`, `it's`, "a\tb  c", `""`, `\`, `"\ "`, `'\''`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, ok := sshConfigArgs(s)
		if !ok {
			return
		}
		if !strings.ContainsAny(s, `"'\#`) {
			if want := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' }); !slices.Equal(args, want) {
				t.Fatalf("%q split as %q, not %q", s, args, want)
			}
		}
		var quoted []string
		for _, a := range args {
			quoted = append(quoted, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a)+`"`)
		}
		again, ok := sshConfigArgs(strings.Join(quoted, " "))
		if !ok || !slices.Equal(again, args) {
			t.Fatalf("%q split as %q, which written back as %q splits as %q", s, args, quoted, again)
		}
	})
}
