package gateway

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watch follows the vault file and the configuration file. It watches
// their directories, since editors and atomic writers replace files
// rather than write them in place. Events are debounced briefly so that a
// burst of writes is one change.
func (g *Gateway) watch(ctx context.Context) (stop func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		g.log.Warn("cannot watch files; send SIGHUP to reload the configuration", "err", err)
		return func() {}
	}
	vaultDir, cfgDir := filepath.Dir(g.vaultPath), filepath.Dir(g.configPath)
	if err := w.Add(vaultDir); err != nil {
		g.log.Warn("cannot watch the vault directory", "dir", vaultDir, "err", err)
	}
	if cfgDir != vaultDir {
		if err := w.Add(cfgDir); err != nil {
			g.log.Debug("not watching the configuration directory", "dir", cfgDir, "err", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		const settle = 50 * time.Millisecond
		var vaultT, cfgT <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				switch filepath.Clean(ev.Name) {
				case g.vaultPath:
					vaultT = time.After(settle)
				case filepath.Clean(g.configPath):
					cfgT = time.After(settle)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				g.log.Warn("file watcher", "err", err)
			case <-vaultT:
				vaultT = nil
				g.vault.fileChanged()
			case <-cfgT:
				cfgT = nil
				g.reloadConfig()
			}
		}
	}()
	return func() {
		w.Close()
		<-done
	}
}
