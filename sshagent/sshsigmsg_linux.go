package sshagent

import (
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/internal/procid"
)

// findMessage looks, among the files the command line of the requester
// (pid) names, for the message of an SSHSIG signature: the one whose
// hash by alg is want. Each is looked up as the requester sees it (its
// root, its working directory) and opened only when it is a regular
// file: a name is a claim, and its hash decides. nil: none is.
func findMessage(procs *procid.Table, pid int, alg string, want []byte) *approvals.SignedMessage {
	dir := filepath.Join(procs.Root, strconv.Itoa(pid))
	for _, name := range operands(procs.Argv(pid)) {
		p := filepath.Join(dir, "cwd", name)
		if filepath.IsAbs(name) {
			p = filepath.Join(dir, "root", name)
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			continue
		}
		m := messageOf(f, name, alg, want)
		f.Close()
		if m != nil {
			// Where the process runs, as the kernel says: git runs
			// ssh-keygen at the top of the work tree.
			m.Dir, _ = os.Readlink(filepath.Join(dir, "cwd"))
			return m
		}
	}
	return nil
}
