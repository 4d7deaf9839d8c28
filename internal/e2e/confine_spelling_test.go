package e2e

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// The files the person's ssh, git and shell run or read, named in their
// configuration through a symbolic link outside the working directory
// (~/code leading to where the person works, the shell in the directory
// itself, as a new tmux window opens it), are in the working directory
// all the same: the run cannot write them.
func TestConfinedRunCannotWriteWhatThePersonNamesThroughALink(t *testing.T) {
	e, git := newGitEnv(t)
	code := e.Home("code")
	if err := os.Symlink(e.Dir, code); err != nil {
		t.Fatal(err)
	}
	planted := e.Path("planted")
	sshConfig := e.Home(".ssh", "config")
	os.MkdirAll(filepath.Dir(sshConfig), 0o700)
	if err := os.WriteFile(sshConfig, []byte("Include ~/code/team_ssh_config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Home(".gitconfig"), []byte("[include]\n\tpath = ~/code/shared.gitconfig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Setenv("PATH", filepath.Join(code, "bin")+":"+e.Getenv("PATH"))
	e.MustRun("git", "init", "-q", "-b", "main", e.Dir)
	d := e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"a file the person's ~/.ssh/config includes", "printf 'Host *\\n  ProxyCommand touch " + planted + "\\n' > team_ssh_config"},
		{"a file the person's ~/.gitconfig includes", "printf '[core]\\n\\tfsmonitor = touch " + planted + "\\n' > shared.gitconfig"},
		{"a program named git in a directory on PATH", "mkdir -p bin && printf '#!/bin/sh\\ntouch " + planted + "\\n' > bin/git && chmod +x bin/git"},
	})
	e.Run("ssh", "-F", sshConfig, "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "somehost", "true")
	e.Run("sh", "-c", git+"status -s")
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the person's ssh, git or shell ran what the run wrote")
	}
}

// A socket of the person's bound to a path through a symbolic link in a
// tree runs never see (the runtime directory, /tmp) is where the link
// leads, in the working directory here: it is hidden there.
func TestConfinedRunCannotReachASocketBoundThroughALink(t *testing.T) {
	need(t, "python3", "ssh-keygen")
	e := newEnv(t)
	e.Config("")
	e.StartAgent()
	through := e.Path("run", "proj")
	if err := os.Symlink(e.Dir, through); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(through, "editor.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // connections wait in its backlog: connect succeeds
	connect := `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" `
	d := e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"the person's socket, bound through a link", connect + "editor.sock"},
	})
	e.MustRun("sh", "-c", connect+e.Path("editor.sock"))
}
