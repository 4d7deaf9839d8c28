package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// watch follows the vault file and the configuration file.
//
// The configuration file's directory is watched, since editors and atomic
// writers replace files rather than write them in place. A configuration
// file that is a symbolic link, or lies in a directory reached through
// one (as dotfile managers make), is followed: the directory of every link
// on the way, the file's own and its directories', and of the file it
// leads to are watched, and the links are read again after each change,
// since they may now lead elsewhere. A directory that does not exist yet is watched for
// from its nearest existing parent.
//
// The vault file is watched itself, not its directory: the audit log
// beside it is written at every signature, and a watch on the directory
// would wake the gateway at each one. After an event on the vault the
// watch is set again before the file is read (an atomic write replaced
// the file the watch was on), and while there is no vault file, or the
// vault's path is a symbolic link, its directory is watched.
//
// A watched directory that is moved away or removed (and perhaps made
// anew in its place) takes its watch with it: the links are then followed
// again, and the directory at that path, or its nearest existing parent,
// is watched.
//
// When the kernel's queue of events overflows, some were lost: both
// files are read again.
//
// Events are debounced briefly so that a burst of writes is one change,
// but events without pause put a read off no longer than a second
// (settle.go).
func (g *Gateway) watch(ctx context.Context) (stop func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		g.log.Warn("cannot watch files; send SIGHUP to reload the configuration", "err", err)
		return func() {}
	}
	dirs := map[string]bool{}
	add := func(dir string) {
		if dirs[dir] {
			return
		}
		if err := w.Add(dir); err != nil {
			g.log.Debug("not watching a directory", "dir", dir, "err", err)
			return
		}
		dirs[dir] = true
	}
	// vaultWatch is what w watches for the vault: its file, or its
	// directory while there is none; "" when that is watched for the
	// configuration too (dirs), or could not be watched.
	vaultWatch := ""
	armVault := func() {
		if vaultWatch != "" && !dirs[vaultWatch] {
			w.Remove(vaultWatch)
		}
		vaultWatch = ""
		// A vault path that is a symbolic link is watched in its
		// directory: a watch on the file would follow the link, and miss
		// the link pointed elsewhere.
		want := g.vaultPath
		if fi, err := os.Lstat(want); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			want = filepath.Dir(want)
		}
		if dirs[want] {
			return
		}
		if err := w.Add(want); err != nil {
			g.log.Warn("cannot watch the vault; a change to its file is seen at the next unlock", "path", want, "err", err)
			return
		}
		vaultWatch = want
	}
	// cfgNames are the configuration file and its links; a change to any
	// of them, or the creation of a missing directory on their way, is
	// a reason to reload.
	var cfgNames map[string]bool
	follow := func() {
		cfgNames = map[string]bool{}
		for _, p := range linkChain(g.configPath) {
			cfgNames[p] = true
			dir := filepath.Dir(p)
			for ; !isDir(dir) && filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
				cfgNames[dir] = true // watched from the nearest existing parent
			}
			add(dir)
		}
	}
	follow()
	armVault()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var vaultT, cfgT settler
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				g.watchEvents.Add(1)
				switch name := filepath.Clean(ev.Name); {
				case name == g.vaultPath:
					vaultT.event()
				case cfgNames[name]:
					cfgT.event()
				case dirs[name] && ev.Has(fsnotify.Remove|fsnotify.Rename):
					// A watched directory moved away or removed:
					// its watch went with it. The directory at that
					// path now, if any, is another one, watched
					// when the links are followed again.
					w.Remove(name)
					delete(dirs, name)
					cfgT.event()
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				g.log.Warn("file watcher", "err", err)
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					// Events were lost, any of them ours: read
					// both files again.
					vaultT.event()
					cfgT.event()
				}
			case <-vaultT.C:
				vaultT.fired()
				armVault() // before reading: a later change is then seen
				g.vault.fileChanged()
			case <-cfgT.C:
				cfgT.fired()
				// Watch where the links lead now before reading: a
				// write to a new target between the read and the
				// watch would be missed.
				follow()
				g.reloadConfig()
			}
		}
	}()
	return func() {
		w.Close()
		<-done
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// linkChain returns path, every path its symbolic links lead to in turn,
// the file it finally resolves to (with linked directories on the way
// resolved too), and the directories on the way to each of these that are
// symbolic links (dirLinks), cleaned and without repeats.
func linkChain(path string) []string {
	p := filepath.Clean(path)
	chain := []string{p}
	seen := map[string]bool{p: true}
	for range 40 {
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
		if seen[p] {
			break
		}
		seen[p] = true
		chain = append(chain, p)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && !seen[real] {
		chain = append(chain, real)
	}
	for _, p := range chain {
		for _, d := range dirLinks(p) {
			if !seen[d] {
				seen[d] = true
				chain = append(chain, d)
			}
		}
	}
	return chain
}

// dirLinks returns the directories on the way to path that are symbolic
// links, and those on the way to where they lead, in turn (at most 40).
func dirLinks(path string) []string {
	var out []string
	seen := map[string]bool{}
	for todo := []string{filepath.Dir(path)}; len(todo) > 0 && len(seen) < 40; todo = todo[1:] {
		for d := todo[0]; d != filepath.Dir(d) && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			t, err := os.Readlink(d)
			if err != nil {
				continue
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(d), t)
			}
			out = append(out, d)
			todo = append(todo, filepath.Clean(t))
		}
	}
	return out
}
