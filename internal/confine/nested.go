package confine

import (
	"os"
	"path/filepath"
)

// The search for repositories inside the writable trees reads the
// directories down to maxRepoDepth-1 levels below each tree (so finds a
// repository whose top is at most two levels below it) and at most
// maxRepoDirs directories, so that
// a large tree costs a run's start a bounded time. node_modules is not
// searched: package managers keep no repository there.
const maxRepoDepth = 3

var maxRepoDirs = 10000 // a variable for the tests

// nestedRepositories returns the .git entries of the repositories inside
// the working directory and the read_write trees (a bare repository's
// directory itself), and the configuration
// files of the Mercurial and Jujutsu ones (see maxRepoDepth);
// complete is false when the search stopped at maxRepoDirs directories.
// Symbolic links are not followed, nor .git directories entered.
func (s *Spec) nestedRepositories() (git, other []string, complete bool) {
	type dir struct {
		path  string
		depth int
	}
	var queue []dir
	for _, w := range s.writableTrees() {
		queue = append(queue, dir{w, 0})
	}
	for read := 0; len(queue) > 0; read++ {
		if read >= maxRepoDirs {
			return git, other, false
		}
		d := queue[0]
		queue = queue[1:]
		ents, err := os.ReadDir(d.path)
		if err != nil {
			continue
		}
		if isBare(ents) {
			// A bare repository (one the person pushes to runs its
			// hooks) is its own git directory, not entered.
			git = append(git, d.path)
			continue
		}
		for _, e := range ents {
			p := filepath.Join(d.path, e.Name())
			cfg := ""
			if e.IsDir() {
				cfg = otherConfigAt(d.path, e.Name())
			}
			switch {
			case e.Name() == ".git":
				git = append(git, p)
			case cfg != "":
				other = append(other, cfg)
			case e.IsDir() && e.Name() != "node_modules" && d.depth+1 < maxRepoDepth:
				queue = append(queue, dir{p, d.depth + 1})
			}
		}
	}
	return git, other, true
}

// isBare reports whether a directory holding ents is a bare git
// repository: a HEAD and a config file, objects and refs directories.
func isBare(ents []os.DirEntry) bool {
	want := map[string]bool{"HEAD": false, "config": false, "objects": true, "refs": true}
	n := 0
	for _, e := range ents {
		if dir, ok := want[e.Name()]; ok && e.IsDir() == dir && (dir || e.Type().IsRegular()) {
			n++
		}
	}
	return n == len(want)
}
