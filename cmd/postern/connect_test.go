package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The block ssh-config prints hands ssh the paths it was given, whatever
// they hold (spaces, quotes, the % that ssh expands), and postern connect
// exactly ssh's %r %h %p as operands, even a user that looks like a flag
// (ssh refuses one on its command line, not in ssh_config).
func TestSSHConfigBlockSurvivesSSHsReading(t *testing.T) {
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatal("this test needs OpenSSH's ssh (.ci/run installs openssh-client):", err)
	}
	dir := filepath.Join(t.TempDir(), `it's 100% a "dir"`)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(t.TempDir(), "args")
	self := filepath.Join(dir, "post ern")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >'" + argsFile + "'\n"
	if err := os.WriteFile(self, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "%h bastion.sock")
	known := filepath.Join(dir, "known hosts %d")
	block, err := sshConfigBlock([]string{"target"}, self, sock, known)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte(block+"\nHost *\n    User --socket=/tmp/elsewhere\n    BatchMode yes\n    ConnectTimeout 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := exec.Command(ssh, "-G", "-F", cfg, "target")
	var stderr strings.Builder
	g.Stderr = &stderr
	out, err := g.Output()
	if err != nil {
		t.Fatalf("ssh cannot read the block (%v): %s\n%s", err, stderr.String(), block)
	}
	if !strings.Contains(string(out), "\nuserknownhostsfile "+known+"\n") {
		t.Errorf("ssh reads the known_hosts file as:\n%s\nwant %s", grepLine(string(out), "userknownhostsfile"), known)
	}
	exec.Command(ssh, "-F", cfg, "target", "true").Run()
	got, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("ssh did not run postern connect (%v):\n%s", err, block)
	}
	want := strings.Join([]string{"connect", "--socket", sock, "--fdpass", "--", "--socket=/tmp/elsewhere", "target", "22"}, "\n") + "\n"
	if string(got) != want {
		t.Fatalf("postern connect ran with\n%s\nwant\n%s", got, want)
	}
}

func grepLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// postern-connect(1) shows the block postern ssh-config prints: the
// example is that block, line for line, for the paths it names.
func TestManShowsTheBlockSSHConfigPrints(t *testing.T) {
	var example []string
	in := false
	for _, l := range manSection(t, "postern-connect.1", "DESCRIPTION") {
		if strings.HasPrefix(l, ".Bd -literal") && example == nil {
			in = true
			continue
		}
		if l == ".Ed" && in {
			break
		}
		if in {
			example = append(example, strings.NewReplacer(`\e`, `\`, `\(dq`, `"`, `\&`, "", `\-`, "-").Replace(l))
		}
	}
	if example == nil {
		t.Fatal("postern-connect(1) shows no ssh_config block")
	}
	block, err := sshConfigBlock([]string{"prod-*"}, "/usr/local/bin/postern", "SOCK", "/home/user/.local/state/postern/bastion_known_hosts")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(example, "\n")+"\n", block; got != want {
		t.Errorf("postern-connect(1) shows the block\n%s\nwhere postern ssh-config prints\n%s", got, want)
	}
}

// The block ssh-config prints names the bastion's socket by an absolute
// path, as postern-connect(1) says, also when --socket gave a relative
// one: ssh runs its ProxyCommand in whatever directory ssh is run from,
// where a relative path names no socket.
func TestSSHConfigNamesTheSocketAbsolute(t *testing.T) {
	tempHome(t)
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errw strings.Builder
	if code := run([]string{"ssh-config", "--socket", "rel.sock", "db-*"}, &out, &errw); code != 0 {
		t.Fatalf("ssh-config: exit %d, %s", code, errw.String())
	}
	want := "--socket '" + filepath.Join(dir, "rel.sock") + "' "
	if line := grepLine(out.String(), "    ProxyCommand"); !strings.Contains(line, want) {
		t.Fatalf("ssh-config --socket rel.sock printed %q, want the socket as %s", line, want)
	}
}
