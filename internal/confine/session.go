package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/postern/postern/internal/envlist"
	"github.com/postern/postern/internal/smallfile"
)

// Session adds to s what hides the user's session from a run and keeps
// what ssh needs, from the environment env of the user's session:
//
//   - hidden: $XDG_RUNTIME_DIR and /run/user/UID (the D-Bus session bus,
//     systemd's and other agents' sockets), the D-Bus session bus named by
//     $DBUS_SESSION_BUS_ADDRESS, tmux's $TMUX_TMPDIR (its default,
//     /tmp/tmux-UID, is in the private /tmp), screen's $SCREENDIR,
//     /run/screen and ~/.screen, ~/.ssh (private keys, ControlMaster
//     sockets), and the X authority file ($XAUTHORITY, ~/.Xauthority),
//     without whose cookie the person's display refuses the run also
//     where the run reaches it, over TCP;
//   - read-only: ~/.ssh/known_hosts, known_hosts2 and config.
func (s *Spec) Session(env []string) {
	get := func(k string) string { return getenv(env, k) }
	home := get("HOME")
	abs := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				return ""
			}
			p = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(p) {
			return ""
		}
		return filepath.Clean(p)
	}
	// The user's runtime directory also where XDG_RUNTIME_DIR is not set
	// (systemd's user manager listens there, and runs what it is told).
	// The X authority file holds the cookie of the person's display,
	// which the run reaches over TCP (ssh -X's localhost:10), the network
	// being the run's too.
	hide := []string{get("XDG_RUNTIME_DIR"), UserRuntimeDir(), get("TMUX_TMPDIR"), get("SCREENDIR"), "/run/screen", "/var/run/screen", "~/.screen", "~/.ssh", get("XAUTHORITY"), "~/.Xauthority"}
	for a := range strings.SplitSeq(get("DBUS_SESSION_BUS_ADDRESS"), ";") {
		for kv := range strings.SplitSeq(strings.TrimPrefix(a, "unix:"), ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok {
				hide = append(hide, p)
			}
		}
	}
	for _, p := range hide {
		if p = abs(p); p != "" {
			s.Hide = append(s.Hide, p)
		}
	}
	for _, f := range []string{"known_hosts", "known_hosts2", "config"} {
		if p := abs("~/.ssh/" + f); p != "" {
			s.ReadOnly = append(s.ReadOnly, p)
		}
	}
}

// getenv returns the value of k in env, the last one set.
func getenv(env []string, k string) string { return envlist.Get(env, k) }

// Check refuses a spec that would give the run a way around what hides
// it: a working directory that is hidden, or inside a hidden tree (the
// tree would be shown again on top of what hides it); a working directory
// or writable tree that is or holds the home directory, ~/.config or
// ~/.local/share (startupTrees), where the run would write the shell's
// start-up files, ~/.config/systemd and the like, which the user's
// programs run outside every run.
func (s *Spec) Check() error {
	for _, h := range append([]string{"/tmp"}, s.Hide...) {
		if h == s.Dir {
			return fmt.Errorf("cannot confine the run: its working directory %s is hidden from runs; start it from another directory", h)
		}
	}
	for _, h := range s.Hide {
		if Under(s.Dir, h) {
			return fmt.Errorf("cannot confine the run: its working directory %s is inside %s, which is hidden from runs; start it from another directory", s.Dir, h)
		}
	}
	home := getenv(s.Env, "HOME")
	if r, err := filepath.EvalSymlinks(home); err == nil {
		home = r
	}
	if home == "" || !filepath.IsAbs(home) {
		return nil
	}
	for _, t := range s.startupTrees(home) {
		if how, ok := t.written(s.Dir); ok {
			return fmt.Errorf("cannot confine the run: its working directory %s %s, which runs may not write; start it from a project's directory", s.Dir, how)
		}
		for _, w := range s.ReadWrite {
			if how, ok := t.written(w); ok {
				return fmt.Errorf("cannot confine the run: the writable tree %s ([run] read_write) %s, which runs may not write", w, how)
			}
		}
		for _, w := range s.ownPaths() {
			if how, ok := t.written(w); ok {
				return fmt.Errorf("cannot confine the run: its cache directory %s %s, which runs may not write", w, how)
			}
		}
	}
	return nil
}

// A startupTree is a tree whose files the person's session runs, outside
// every run, by its name for an error. A run may write inside one that
// is not whole (a project in ~/.config), never inside one that is.
type startupTree struct {
	path, name string
	whole      bool
}

// written says how a run that writes the tree w would write t, if it
// would.
func (t startupTree) written(w string) (string, bool) {
	switch {
	case Under(t.path, w):
		return "holds " + t.name, true
	case t.whole && Under(w, t.path):
		return "is inside " + t.name, true
	}
	return "", false
}

// startupTrees are the trees no working directory or writable tree of a
// run may be or hold: the home directory (the shell's start-up files),
// ~/.config and ~/.local/share; nor be inside: the trees there whose
// files the session runs (systemd's user units, the desktop's autostart
// entries, environment.d) or git reads (its configuration). A project
// inside one of the others (~/.config/nvim) may be worked in.
func (s *Spec) startupTrees(home string) []startupTree {
	out := []startupTree{{home, "the home directory", false}}
	// ~/.config also where XDG_CONFIG_HOME names another directory: the
	// session's programs (systemd's user manager) may not have it set.
	config, share := filepath.Join(home, ".config"), filepath.Join(home, ".local", "share")
	for _, t := range []struct {
		p     string
		whole bool
	}{
		{config, false}, {share, false},
		{filepath.Join(config, "systemd"), true}, {filepath.Join(config, "autostart"), true},
		{filepath.Join(config, "environment.d"), true}, {filepath.Join(config, "git"), true},
		{filepath.Join(share, "systemd"), true},
	} {
		p := t.p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, startupTree{filepath.Clean(p), p, t.whole})
	}
	return out
}

// Resolve makes the paths of s absolute and free of symbolic links, as
// the mounts need them, and drops those that do not exist.
func (s *Spec) Resolve() {
	if d, err := filepath.EvalSymlinks(s.Dir); err == nil {
		s.Dir = d
	}
	resolve := func(p string) (string, bool) {
		if !filepath.IsAbs(p) {
			return "", false
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r, true
		} else if _, err := os.Lstat(p); err == nil {
			return filepath.Clean(p), true
		}
		return "", false
	}
	for _, l := range []*[]string{&s.ReadWrite, &s.ReadOnly, &s.Hide, &s.Sockets} {
		var out []string
		for _, p := range *l {
			if r, ok := resolve(p); ok {
				out = append(out, r)
			}
		}
		*l = out
	}
	var own []Own
	for _, o := range s.Own {
		path, ok := resolve(o.Path)
		from, ok2 := resolve(o.From)
		if ok && ok2 {
			own = append(own, Own{Path: path, From: from})
		}
	}
	s.Own = own
}

// sshConfigKeyword splits an ssh_config line into its keyword and the
// rest, as readconf.c does: spaces, or one '=' with spaces around it,
// between them.
func sshConfigKeyword(line string) (keyword, rest string) {
	const space = " \t\r\n"
	line = strings.Trim(line, space+"\f")
	i := strings.IndexAny(line, space+"=")
	if i < 0 {
		return line, ""
	}
	rest = strings.TrimLeft(line[i:], space)
	if r, ok := strings.CutPrefix(rest, "="); ok {
		rest = strings.TrimLeft(r, space)
	}
	return line[:i], rest
}

// sshConfigArgs splits the arguments of an ssh_config line as OpenSSH's
// argv_split does: words apart by spaces or tabs, double or single
// quotes around any part of one, a backslash before a quote, a
// backslash or (outside quotes) a space taking it as it is, and a word
// that starts with '#' ending the line. A quote left open is refused,
// as ssh refuses it.
func sshConfigArgs(s string) (args []string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\t' {
			continue
		}
		if s[i] == '#' {
			break
		}
		var arg []byte
		var quote byte
	word:
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\' && i+1 < len(s) && (strings.IndexByte(`'"\`, s[i+1]) >= 0 || quote == 0 && s[i+1] == ' '):
				i++
				arg = append(arg, s[i])
			case quote == 0 && (c == ' ' || c == '\t'):
				break word
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
			case quote != 0 && c == quote:
				quote = 0
			default:
				arg = append(arg, c)
			}
		}
		if quote != 0 {
			return nil, false
		}
		args = append(args, string(arg))
	}
	return args, true
}

// maxSSHIncludes bounds the files SSHIncludes follows.
const maxSSHIncludes = 64

// SSHIncludes shows read-only the files that the person's ~/.ssh/config
// includes (Include, and what those include in turn) inside the working
// directory or a writable tree, made empty first where a named file is
// missing: the person's next ssh, outside every run, would run a
// ProxyCommand or LocalCommand the run wrote there. For a pattern, the
// directory it matches in is read-only (made first where missing): a new
// file there would match it. It fails when that directory is the working
// directory itself, which a run cannot work in read-only, and with an
// [*ErrLinkInWritable] when a file or directory is reached through a
// symbolic link in a tree the run writes.
func (s *Spec) SSHIncludes(env []string) error {
	home := getenv(env, "HOME")
	if home == "" {
		return nil
	}
	dotSSH := filepath.Join(home, ".ssh")
	queue, seen := []string{filepath.Join(dotSSH, "config")}, map[string]bool{}
	var files []string
	for len(queue) > 0 && len(seen) < maxSSHIncludes {
		c := queue[0]
		queue = queue[1:]
		if seen[c] {
			continue
		}
		seen[c] = true
		b, err := smallfile.Read(c, maxGitFile)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			keyword, rest := sshConfigKeyword(line)
			if !strings.EqualFold(keyword, "include") {
				continue
			}
			args, _ := sshConfigArgs(rest) // ssh refuses a line it cannot split
			for _, p := range args {
				switch {
				case strings.HasPrefix(p, "~/"):
					p = filepath.Join(home, p[2:])
				case !filepath.IsAbs(p):
					p = filepath.Join(dotSSH, p)
				}
				p = filepath.Clean(p)
				matches, _ := filepath.Glob(p)
				pattern := strings.ContainsAny(p, "*?[")
				if len(matches) == 0 && !pattern && s.writable(p) {
					matches = []string{touch(p)}
				}
				if dir := globDir(p); pattern && s.writable(dir) {
					if s.located(dir) == s.located(s.Dir) {
						return fmt.Errorf("cannot confine the run: %s includes %s, which a file the run writes in its working directory would match; start it from another directory", filepath.Join(dotSSH, "config"), p)
					}
					os.MkdirAll(dir, 0o700)
					files = appendNew(files, s.ReadOnly, dir)
				}
				for _, m := range matches {
					queue = append(queue, m)
					if s.writable(m) && (!pattern || !s.writable(globDir(p))) {
						files = appendNew(files, s.ReadOnly, m)
					}
				}
			}
		}
	}
	if err := s.checkLinks(files...); err != nil {
		return err
	}
	s.ReadOnly = append(s.ReadOnly, files...)
	return nil
}

// globDir returns the directory a path pattern matches in: its elements
// before the first that holds a pattern character.
func globDir(p string) string {
	dir := p
	for strings.ContainsAny(dir, "*?[") {
		dir = filepath.Dir(dir)
	}
	return dir
}

// appendNew appends p to list unless list or also holds it.
func appendNew(list, also []string, p string) []string {
	if slices.Contains(list, p) || slices.Contains(also, p) {
		return list
	}
	return append(list, p)
}
