package e2e

// Confined runs, end to end: what an AI agent needs still works inside
// (ssh, git clone and push, make, a Python program writing its cache),
// and each way a run once reached around the gate is tried from inside a
// confined run and refused, while a person in another terminal approves.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/internal/syncbuf"
)

// confinedWorld is an approval world whose runs are confined.
func newConfinedWorld(t *testing.T, config string, aliases ...string) *approvalWorld {
	need(t, "git", "make", "python3", "tmux", "setsid", "gdb")
	w := newApprovalWorld(t, config, aliases...)
	os.MkdirAll(w.e.Home(".cache"), 0o700)
	return w
}

func TestConfinedRunHonestPath(t *testing.T) {
	w := newConfinedWorld(t, "")
	// A repository on the ssh server, to clone and push to.
	repo := filepath.Join(w.sshd.Dir, "repo.git")
	src := w.e.Path("src")
	w.e.MustRun("git", "init", "-q", "-b", "main", src)
	w.e.WriteFile("src/README", "hello\n", 0o644)
	w.e.MustRun("git", "-C", src, "add", "README")
	w.e.MustRun("git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
	w.e.MustRun("git", "clone", "-q", "--bare", src, repo)
	w.e.Setenv("GIT_SSH_COMMAND", "ssh "+strings.Join(w.sshd.SSHArgs(), " "))
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", w.sshd.User, w.sshd.Port, repo)

	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	text := w.e.MustRun("postern", "approve", "--list").Stdout
	if !strings.Contains(text, "Confinement: confined: namespaces, Landlock ABI ") {
		t.Fatalf("the card does not say how the run is confined:\n%s", text)
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "ssh from the confined run", job.Wait())

	mustSucceed(t, "git clone", a.Do("git clone -q "+url+" clone"))
	mustSucceed(t, "git commit", a.Do("cd clone && echo more >> README && git -c user.name=t -c user.email=t@example.com commit -qam second"))
	mustSucceed(t, "git push", a.Do("cd clone && git push -q origin main"))
	if r := w.e.Run("git", "-C", repo, "log", "--oneline"); r.Code != 0 || !strings.Contains(r.Stdout, "second") {
		t.Fatalf("the push did not reach the server: %s", r)
	}
	w.e.WriteFile("Makefile", "all:\n\techo built > built.txt\n", 0o644)
	mustSucceed(t, "make", a.Do("make -s"))
	if b, _ := os.ReadFile(w.e.Path("built.txt")); string(b) != "built\n" {
		t.Fatalf("make wrote %q", b)
	}
	// The run writes its cache as it would ~/.cache; it is the run's own,
	// kept for the next run, and none of it is in the person's.
	py := `import os; p = os.path.expanduser("~/.cache/agent/state"); os.makedirs(os.path.dirname(p), exist_ok=True); open(p, "w").write("cached")`
	mustSucceed(t, "python writing ~/.cache", a.Do("python3 -c '"+py+"'"))
	if b, _ := os.ReadFile(w.e.Home(".cache", "postern", "run", "agent", "state")); string(b) != "cached" {
		t.Fatalf("python's cache file: %q", b)
	}
	if _, err := os.Stat(w.e.Home(".cache", "agent")); err == nil {
		t.Fatal("the run wrote the person's cache")
	}
	b := w.e.StartRun("coder")
	mustSucceed(t, "the next run reads the cache", b.Do("grep -q cached ~/.cache/agent/state"))
	w.e.NoCard()
}

// A shell prompt's instant-start script in the person's cache (as
// powerlevel10k keeps one, sourced by every new zsh) is not the run's
// to write: the run's cache directory is its own.
func TestConfinedRunCannotWriteThePersonsCache(t *testing.T) {
	need(t, "ssh-keygen")
	e := newEnv(t)
	e.Config("")
	e.StartAgent()
	prompt := e.Home(".cache", "p10k-instant-prompt-u.zsh")
	os.MkdirAll(filepath.Dir(prompt), 0o700)
	if err := os.WriteFile(prompt, []byte("# the prompt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := e.StartRun("coder")
	mustSucceed(t, "writing its cache", d.Do("echo 'touch ~/planted' >> ~/.cache/p10k-instant-prompt-u.zsh && mkdir -p ~/.cache/go-build && echo x > ~/.cache/go-build/entry"))
	if b := string(mustRead(t, prompt)); b != "# the prompt\n" {
		t.Fatalf("the run wrote the person's prompt script:\n%s", b)
	}
	if _, err := os.Stat(e.Home(".cache", "go-build")); err == nil {
		t.Fatal("the run wrote the person's build cache")
	}
}

// Every escape once used from inside a run, tried from a confined one
// while its card waits; each is refused and the card stays unanswered,
// until the person outside answers it.
func TestConfinedRunEscapesAreRefused(t *testing.T) {
	w := newConfinedWorld(t, "", "prod-db")
	// known_hosts in the working directory, which the run writes, as a
	// project's own may be: only postern keeps it read-only there (the
	// server's own, under /tmp, is out of the run's sight whatever
	// postern does).
	w.sshd.KnownHosts = w.e.WriteFile("known_hosts", string(mustRead(t, w.sshd.KnownHosts)), 0o600)
	askpass := w.e.WriteFile("askpass", "#!/bin/sh\nexit 1\n", 0o755)
	w.e.Config(fmt.Sprintf("known_hosts = [%q]\n[[rule]]\nhost = \"prod-*\"\napproval = \"per-call\"\n%s", w.sshd.KnownHosts,
		strings.Replace(runSection(), "read_only = [", fmt.Sprintf("read_only = [%q, ", askpass), 1)))
	w.agent.ApprovePolicy(t) // showing more to runs loosens
	// Host rules match the host inventory's names.
	w.e.MustRun("postern", "hosts", "import", "prod-db")
	cfgPath := w.e.Path("config", "postern", "config.toml")
	cfgBefore := string(mustRead(t, cfgPath))
	khBefore := string(mustRead(t, w.sshd.KnownHosts))

	// The person's approver, in a tmux window outside the run.
	// Its server is where a person's is (-L), for the run to try.
	server := "pt-" + filepath.Base(w.e.Dir)
	env := "env -i " + strings.Join(w.e.Environ(), " ")
	term := startNamedTmux(t, w.e, server, 200, 60, env+" postern approve --line")
	tmux, screen := term.run, term.screen
	waitFor(t, func() bool { return strings.Contains(screen(), "waiting for approval cards") })

	// The person's shell names the vault's passphrase file.
	w.e.Setenv("POSTERN_PASSPHRASE_FILE", w.pass)
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd, "-o", "HostKeyAlias=prod-db"))
	c := w.e.WaitCard()
	waitFor(t, func() bool { return strings.Contains(screen(), "card "+c.ID+": type prod-db to approve") })
	ctl := w.agent.Socket + ".ctl"
	escapes := []escape{
		{"tmux new-window running postern approve", fmt.Sprintf("tmux -L %s new-window 'postern approve %s --session'", server, c.ID)},
		{"tmux send-keys into the approver's pane", fmt.Sprintf("tmux -L %s send-keys prod-db Enter", server)},
		{"setsid -f postern approve", fmt.Sprintf("setsid -f postern approve %s --once --socket %s; sleep 1; postern approve %s --once --socket %s", c.ID, w.agent.Socket, c.ID, w.agent.Socket)},
		{"the control socket by its path", "test -e " + ctl},
		{"rewriting config.toml", fmt.Sprintf("printf 'approval = \"none\"\\n' > %s", cfgPath)},
		{"ssh-keygen -R prod-db", fmt.Sprintf("ssh-keygen -R prod-db -f %s", w.sshd.KnownHosts)},
		{"rewriting the askpass program", fmt.Sprintf("printf '#!/bin/sh\\nexit 0\\n' > %s", askpass)},
		{"resolving a journal entry", fmt.Sprintf("postern journal resolve J00000000 --not-started --socket %s", w.agent.Socket)},
		{"the state directory", "ls " + w.e.Path("state", "postern") + "/vault"},
		{"a process outside the run", fmt.Sprintf("test -e /proc/%d", w.agent.PID())},
		{"gdb attaching to the run's helper", "gdb -batch -p 1 -ex 'call (int)getpid()' 2>&1 | grep -q '= 1'"},
		{"another terminal of the user", "ls /dev/pts/ | grep -qv ptmx"},
		{"the D-Bus session bus", "test -e " + w.e.Path("run", "bus")},
		{"the vault's passphrase file", "grep -q 'vault pass' " + w.pass},
		{"the passphrase file's name", `test -n "$POSTERN_PASSPHRASE_FILE"`},
		{"moving the configuration's directory aside", fmt.Sprintf("mv %s %s.old", w.e.Path("config"), w.e.Path("config"))},
		{"moving the state directory aside", fmt.Sprintf("mv %s %s.old", w.e.Path("state"), w.e.Path("state"))},
		{"ssh-add -x locking the agent", "SSH_ASKPASS=/bin/true SSH_ASKPASS_REQUIRE=force DISPLAY=:0 ssh-add -x"},
	}
	os.WriteFile(w.e.Path("run", "bus"), nil, 0o600) // stands for the session bus's socket
	mustBeRefused(t, a, escapes)
	if job.Done() {
		t.Fatal("the card was answered from inside the run")
	}
	if cs := w.e.cards(); len(cs) != 1 || cs[0].ID != c.ID {
		t.Fatalf("the card was answered from inside the run: %+v", cs)
	}
	if got := string(mustRead(t, cfgPath)); got != cfgBefore {
		t.Fatalf("the run changed the configuration:\n%s", got)
	}
	if got := string(mustRead(t, w.sshd.KnownHosts)); got != khBefore {
		t.Fatalf("the run changed known_hosts:\n%s", got)
	}
	if b := mustRead(t, askpass); !strings.Contains(string(b), "exit 1") {
		t.Fatalf("the run changed the askpass program:\n%s", b)
	}
	// The person answers in the approver's pane, typing the host's name:
	// the per-call login goes through.
	tmux("send-keys", "prod-db", "Enter")
	mustSucceed(t, "approved from outside", job.Wait())

	// A descriptor of the state directory that postern run inherited
	// (a shell's redirection) does not reach the run.
	inherited := fmt.Sprintf("exec 8<%s; exec postern run -- sh -c 'ls /proc/self/fd/8/'", w.e.Path("state", "postern"))
	if r := w.e.Run("sh", "-c", inherited); r.Code == 0 {
		t.Errorf("a descriptor postern run inherited reached the confined run:\n%s", r.Stdout)
	}
	// Nor does a run start in the home directory, whose start-up files
	// the next shell runs outside every run.
	fromHome := w.e.Command("postern", "run", "--", "sh", "-c", "echo rc >> .bashrc")
	fromHome.Dir = w.e.Home()
	if r := w.e.finish(fromHome, ""); r.Code == 0 || !strings.Contains(r.Stderr, "holds the home directory") {
		t.Errorf("a confined run started in the home directory: %s", r)
	}
	if _, err := os.Stat(w.e.Home(".bashrc")); err == nil {
		t.Error("a run wrote ~/.bashrc")
	}
}

// Nor does a run start in ~/.config, where a systemd user unit it wrote
// would run at the person's next login, outside every run.
func TestConfinedRunCannotWriteUserUnits(t *testing.T) {
	w := newConfinedWorld(t, "")
	os.MkdirAll(w.e.Home(".config"), 0o700)
	unit := "mkdir -p systemd/user && printf '[Service]\\nExecStart=/bin/true\\n' > systemd/user/x.service"
	fromConfig := w.e.Command("postern", "run", "--", "sh", "-c", unit)
	fromConfig.Dir = w.e.Home(".config")
	if r := w.e.finish(fromConfig, ""); r.Code == 0 || !strings.Contains(r.Stderr, "holds "+w.e.Home(".config")) {
		t.Errorf("a confined run started in ~/.config: %s", r)
	}
	if _, err := os.Stat(w.e.Home(".config", "systemd", "user", "x.service")); err == nil {
		t.Error("a run wrote a systemd user unit")
	}
}

// postern built in the directory a run works in (a checkout of postern,
// as the README's set-up builds it) is the person's: the next approval
// console and the next gateway run it. The gateway shows its own
// executable read-only to confined runs, and its directory cannot be
// moved aside. A directory of the working directory on the person's PATH
// (the checkout's bin/, which the set-up puts first) is read-only too: a
// program the run put there as ssh would be the person's next ssh.
func TestConfinedRunCannotRewriteTheGateway(t *testing.T) {
	need(t, "ssh-keygen")
	e := newEnv(t)
	path := e.Getenv("PATH")
	gw := e.Path("tools", "postern")
	e.UsePostern(gw)
	os.MkdirAll(e.Path("bin"), 0o755)
	e.Setenv("PATH", e.Path("bin")+":"+path) // tools/ is not on PATH
	e.Config("")
	a := e.StartAgent()
	before := mustRead(t, gw)
	d := e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"appending to the gateway's executable", "echo >> tools/postern"},
		{"replacing it", "cp /bin/true tools/postern.new && mv tools/postern.new tools/postern"},
		{"removing it", "rm -f tools/postern && test ! -e tools/postern"},
		{"moving its directory aside", "mv tools tools.old"},
		{"a program named ssh in a directory on PATH", "printf '#!/bin/sh\\n' > bin/ssh && chmod +x bin/ssh"},
		{"moving that directory aside", "mv bin bin.old"},
	})
	// A file in the working directory that the person's ~/.ssh/config
	// includes (not written yet), where a ProxyCommand runs on the
	// person's next ssh.
	planted := e.Path("planted")
	sshConfig := e.Home(".ssh", "config")
	os.MkdirAll(filepath.Dir(sshConfig), 0o700)
	// And a pattern it includes there, which a new file would match.
	os.MkdirAll(e.Path("team.d"), 0o755)
	if err := os.WriteFile(sshConfig, []byte("Include "+e.Path("team_ssh_config")+" "+e.Path("team.d")+"/*.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d2 := e.StartRun("coder")
	mustBeRefused(t, d2, []escape{
		{"a file the person's ~/.ssh/config includes", "printf 'Host *\\n  ProxyCommand touch " + planted + "\\n' > team_ssh_config"},
		{"a new file a pattern the person's ~/.ssh/config includes matches", "printf 'Host *\\n  ProxyCommand touch " + planted + "\\n' > team.d/new.conf"},
	})
	e.Run("ssh", "-F", sshConfig, "-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "somehost", "true")
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the person's ssh ran a ProxyCommand the run wrote")
	}
	// The rest of the working directory stays the run's.
	mustSucceed(t, "writing beside them", d.Do("echo x > tools/notes && echo y > other"))
	if got := mustRead(t, gw); !bytes.Equal(got, before) {
		t.Fatalf("the run changed the gateway's executable\n%s", a.Log())
	}
	if _, err := os.Stat(e.Path("bin", "ssh")); err == nil {
		t.Fatal("the run put a program on the person's PATH")
	}
	// The working directory itself on PATH: the run is refused.
	e.Setenv("PATH", e.Dir+":"+path)
	if r := e.Run("postern", "run", "--", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "is on PATH") {
		t.Fatalf("a run in a directory on PATH: %s", r)
	}
	// A relative entry names a directory of the one the person's shell
	// is in, as it was when it started the run: "." (or an empty entry)
	// is the working directory, and node_modules/.bin its own.
	for _, p := range []string{".:" + path, path + ":"} {
		e.Setenv("PATH", p)
		if r := e.Run("postern", "run", "--", "true"); r.Code == 0 || !strings.Contains(r.Stderr, "is on PATH") {
			t.Errorf("a run in a directory on PATH as %q: %s", p, r)
		}
	}
	e.Setenv("PATH", "node_modules/.bin:"+path)
	d = e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"a program named ssh in a relative directory of PATH", "mkdir -p node_modules/.bin && printf '#!/bin/sh\\n' > node_modules/.bin/ssh && chmod +x node_modules/.bin/ssh"},
	})
}

// newGitEnv is a world with a gateway and the default configuration for
// the git tests, and the git command line they commit with.
func newGitEnv(t *testing.T) (*Env, string) {
	need(t, "git")
	e := newEnv(t)
	e.Config("")
	e.StartAgent()
	return e, "git -c user.name=t -c user.email=t@example.com "
}

// A run works in the person's git repository: it commits, branches and
// pushes, but cannot leave a hook or a configuration that the person's
// next git command, outside every run, would execute.
func TestConfinedRunCannotPlantGitHooks(t *testing.T) {
	e, git := newGitEnv(t)
	e.MustRun("git", "init", "-q", "-b", "main", e.Dir)
	e.MustRun("git", "init", "-q", "--bare", e.Path("remote.git"))
	e.MustRun("sh", "-c", git+"commit -q --allow-empty -m first && git remote add origin remote.git && rm -rf .git/hooks")
	// A submodule, whose git directory is .git/modules/sub.
	e.MustRun("git", "init", "-q", "-b", "main", e.Path("subsrc"))
	e.MustRun("sh", "-c", "cd subsrc && "+git+"commit -q --allow-empty -m s && cd .. && "+git+"-c protocol.file.allow=always submodule add -q "+e.Path("subsrc")+" sub && "+git+"commit -qm sub")
	// A linked worktree, with per-worktree configuration turned on and
	// no config.worktree yet.
	e.MustRun("sh", "-c", "git worktree add -q wt && git config extensions.worktreeConfig true")
	// One deeper than the search for repositories, its gitdir file
	// relative, as git worktree add --relative-paths writes it.
	e.MustRun("sh", "-c", "git worktree add -q a/b/c/deep && echo ../../../a/b/c/deep/.git > .git/worktrees/deep/gitdir")
	// Configuration the person's config includes: one beside it, not
	// written yet, and one in the work tree.
	e.WriteFile("team.gitconfig", "[user]\n\tname = t\n", 0o644)
	e.MustRun("sh", "-c", "git config include.path local.gitconfig && git config includeIf.gitdir:/.path ../team.gitconfig")
	// And one that the person's own ~/.gitconfig includes, in the working
	// directory (a workspace's shared settings), not written yet.
	if err := os.WriteFile(e.Home(".gitconfig"), []byte("[include]\n\tpath = "+e.Path("shared.gitconfig")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := e.Path("planted")
	hook := "printf '#!/bin/sh\\ntouch " + planted + "\\n' > "
	// A repository of the run's own, whose configuration runs the plant:
	// the escapes below point the person's git at it.
	evil := "git init -q evil && git -C evil config core.fsmonitor 'touch " + planted + "' && "
	fsmonitor := "printf '[core]\\n\\tfsmonitor = touch " + planted + "\\n' > "
	d := e.StartRun("coder")
	mustSucceed(t, "commit, branch and push", d.Do(git+"commit -q --allow-empty -m second && git checkout -q -b topic && git push -q origin topic"))
	mustBeRefused(t, d, []escape{
		{"a hook", "mkdir -p .git/hooks && " + hook + ".git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"},
		{"core.hooksPath", "mkdir -p h && " + hook + "h/pre-commit && chmod +x h/pre-commit && git config core.hooksPath h"},
		{"core.fsmonitor", "git config core.fsmonitor 'touch " + planted + "'"},
		{"moving the hooks directory aside", "mv .git/hooks .git/hooks.old"},
		{"a submodule's hook", hook + ".git/modules/sub/hooks/post-checkout && chmod +x .git/modules/sub/hooks/post-checkout"},
		{"a submodule's core.fsmonitor", "git -C sub config core.fsmonitor 'touch " + planted + "'"},
		{"moving the git directory aside", "mv .git .git.old"},
		{"a worktree's .git file", evil + "echo gitdir: $PWD/evil/.git > wt/.git"},
		{"a worktree's commondir", evil + "echo $PWD/evil/.git > .git/worktrees/wt/commondir"},
		{"a deep worktree's .git file, named relatively", evil + "echo gitdir: $PWD/evil/.git > a/b/c/deep/.git"},
		{"a worktree's config.worktree", fsmonitor + ".git/worktrees/wt/config.worktree"},
		{"the main worktree's config.worktree", fsmonitor + ".git/config.worktree"},
		{"moving the worktree aside", "mv wt wt.old"},
		{"a submodule's .git file", evil + "echo gitdir: $PWD/evil/.git > sub/.git"},
		{"an included configuration file, missing", fsmonitor + ".git/local.gitconfig"},
		{"an included configuration file in the work tree", fsmonitor + "team.gitconfig"},
		{"a file the person's ~/.gitconfig includes", fsmonitor + "shared.gitconfig"},
		{"the repository's commondir", evil + "echo $PWD/evil/.git > .git/commondir"},
		{"a submodule's commondir", evil + "echo $PWD/evil/.git > .git/modules/sub/commondir"},
		{"a hook of the bare repository pushed to", hook + "remote.git/hooks/post-receive && chmod +x remote.git/hooks/post-receive"},
	})
	// The person's own commit, outside the run, runs nothing of the run's.
	e.MustRun("sh", "-c", git+"commit -q --allow-empty -m third && git status -s && git submodule -q update --checkout --force && git -C wt status -s && git -C a/b/c/deep status -s && git push -q origin HEAD:person")
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the person's git command executed what the run wrote")
	}
}

// ssh-add -D and -d inside a run remove the keys the run added, never
// the person's.
func TestRunRemovesOnlyItsOwnKeys(t *testing.T) {
	need(t, "ssh-add", "ssh-keygen")
	e := newEnv(t)
	e.Config(`approval = "none"`)
	e.StartAgent()
	person := e.Keygen("person", "ed25519", 0, "")
	e.AddKey(person)
	own := e.Keygen("run-own", "ed25519", 0, "")
	d := e.StartRun("coder")
	mustSucceed(t, "the run adds a key", d.Do("ssh-add "+own))
	mustBeRefused(t, d, []escape{{"ssh-add -d of the person's key", "ssh-add -d " + person + ".pub"}})
	mustSucceed(t, "the run's ssh-add -D", d.Do("ssh-add -D"))
	l := e.MustRun("ssh-add", "-l").Stdout
	if !strings.Contains(l, fingerprint(t, e, person)) || strings.Contains(l, fingerprint(t, e, own)) {
		t.Fatalf("after the run's ssh-add -d and -D the agent lists:\n%s", l)
	}
}

// An escape is a shell command a confined run must fail at.
type escape struct{ name, cmd string }

// mustBeRefused runs each escape in d and fails the test for each that
// succeeded.
func mustBeRefused(t *testing.T, d *Driver, escapes []escape) {
	t.Helper()
	for _, esc := range escapes {
		if r := d.Do(esc.cmd); r.Code == 0 {
			t.Errorf("%s: succeeded from inside the confined run:\n%s", esc.name, r)
		}
	}
}

// --no-sandbox runs unconfined, and every card for the run says that a
// program of the run could answer it.
func TestNoSandboxCardSaysUnconfined(t *testing.T) {
	w := newApprovalWorld(t, "")
	a := w.e.StartRunWith("coder", "--no-sandbox")
	job := a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	if text := w.e.MustRun("postern", "approve", "--list").Stdout; !strings.Contains(text, "Confinement: unconfined: a program of this run could answer this card") {
		t.Fatalf("card:\n%s", text)
	}
	w.e.MustRun("postern", "deny", c.ID)
	job.Wait()
	// An unconfined run sees the gateway's files.
	if r := a.Do("test -e " + w.e.Path("state", "postern")); r.Code != 0 {
		t.Fatal("--no-sandbox confined the run")
	}
}

// Where user namespaces are disabled, postern run refuses, names the
// setting and --no-sandbox, and runs nothing. The setting is per user
// namespace: the test sets it to 0 in one of its own.
func TestRunRefusedWithoutUserNamespaces(t *testing.T) {
	need(t, "unshare")
	w := newApprovalWorld(t, "")
	marker := w.e.Path("ran")
	cmd := w.e.Command("unshare", "--user", "--map-current-user", "--", "/bin/sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh", posternBin, "run", "--", "touch", marker)
	r := w.e.finish(cmd, "")
	if r.Code != 1 || !strings.Contains(r.Stderr, "user.max_user_namespaces = 0") || !strings.Contains(r.Stderr, "--no-sandbox") {
		t.Fatalf("postern run without user namespaces: %s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran unconfined")
	}
	// With --no-sandbox it runs, unconfined.
	cmd = w.e.Command("unshare", "--user", "--map-current-user", "--", "/bin/sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`, "sh", posternBin, "run", "--no-sandbox", "--", "touch", marker)
	if r := w.e.finish(cmd, ""); r.Code != 0 {
		t.Fatalf("postern run --no-sandbox: %s", r)
	}
}

// exposeControl writes a configuration that shows confined runs the
// control socket, as a careless [run] read_only would: the runs can then
// reach the gateway, and only the namespace check stands between them and
// the answers.
func exposeControl(w *approvalWorld, config string) {
	showReadOnly(w, config, w.agent.Socket+".ctl")
}

// showReadOnly writes config with the paths added to [run] read_only,
// and has the gateway load it.
func showReadOnly(w *approvalWorld, config string, paths ...string) {
	var quoted strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&quoted, "%q, ", p)
	}
	w.e.Config(config + strings.Replace(runSection(), "read_only = [", "read_only = ["+quoted.String(), 1))
	w.agent.ApprovePolicy(w.e.t)
}

// detached runs command in the run, detached by setsid -f: out of the
// run's process tree (inside the run's pid namespace, orphans go to its
// helper) and out of its terminal session. It returns the output and the
// exit status, once written.
func detached(t *testing.T, w *approvalWorld, a *Driver, name, command string) string {
	out := w.e.Path(name + ".out")
	a.Do(fmt.Sprintf("setsid -f sh -c '%s > %s 2>&1; echo exit=$? >> %s'", command, out, out))
	waitFor(t, func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "exit=") })
	return string(mustRead(t, out))
}

func TestAnswerFromInsideConfinedRunIsRefused(t *testing.T) {
	w := newApprovalWorld(t, "")
	exposeControl(w, fmt.Sprintf("known_hosts = [%q]\n", w.sshd.KnownHosts))
	a := w.e.StartRun("coder")
	job := a.Start(sshCmd(w.sshd))
	c := w.e.WaitCard()
	out := detached(t, w, a, "approve", fmt.Sprintf("postern approve %s --session --socket %s", c.ID, w.agent.Socket))
	if !strings.Contains(out, "exit=254") || !strings.Contains(out, "inside a confined run") {
		t.Fatalf("approval from inside the confined run: %s", out)
	}
	if job.Done() {
		t.Fatal("the request was decided by its own run")
	}
	w.approve(c.ID, "--session")
	mustSucceed(t, "approved from outside", job.Wait())
}

// The run cut off its own bastion command, then tried to mark it "not
// started", by hand or by a probe, so that an identical retry runs with
// nobody asked: refused from inside; the retry stays refused; a person outside resolves it, and
// the audit log says who.
func TestJournalResolveFromInsideConfinedRunIsRefused(t *testing.T) {
	b := newBastionWorld(t, "")
	counter := filepath.Join(b.sshd.Dir, "runs")
	command, e := b.killMidCommand(counter)
	exposeControl(b.approvalWorld, fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n[bastion]\nenabled = true\nhosts = [\"127.0.0.1\"]\n", b.sshd.KnownHosts))
	a := b.e.StartRun("coder")
	out := detached(t, b.approvalWorld, a, "resolve", fmt.Sprintf("postern journal resolve %s --not-started --socket %s", e.ID, b.agent.Socket))
	if !strings.Contains(out, "exit=254") || !strings.Contains(out, "inside a confined run") {
		t.Fatalf("resolve from inside the confined run: %s", out)
	}
	// Nor may it have a probe say so: the markers a probe reads are in the
	// host account, where the run's own commands can remove them.
	out = detached(t, b.approvalWorld, a, "probe", fmt.Sprintf("postern journal resolve %s --socket %s", e.ID, b.agent.Socket))
	if !strings.Contains(out, "exit=254") || !strings.Contains(out, "inside a confined run") {
		t.Fatalf("a probe asked for from inside the confined run: %s", out)
	}
	b.denyRetry(e.ID, b.sshArgs(b.sshd.Port, command))
	if n := strings.Count(string(mustRead(t, counter)), "run"); n != 1 {
		t.Fatalf("the command ran %d times", n)
	}
	b.e.MustRun("postern", "journal", "resolve", e.ID, "--not-started", "--evidence", "checked the host")
	audit := b.e.MustRun("postern", "audit", "show", "--json", "--passphrase-file", b.pass).Stdout
	if !strings.Contains(audit, `"approver":"pid=`) || !strings.Contains(audit, "command_resolved") {
		t.Fatalf("the audit log does not say who resolved the entry:\n%s", audit)
	}
}

// The person's unix sockets outside ~/.ssh and the session's
// directories are out of a confined run's reach: an ssh ControlMaster
// (which would open sessions on the host with no card) and a program's
// socket in the working directory (an editor's, which would run commands
// outside the run). The run's own sockets still work.
func TestConfinedRunCannotReachThePersonsSockets(t *testing.T) {
	need(t, "python3")
	w := newApprovalWorld(t, `approval = "none"`)
	// The home directory is visible to runs, read-only, as it is outside
	// the tests (here it is under /tmp, which runs do not see).
	showReadOnly(w, fmt.Sprintf("approval = \"none\"\nknown_hosts = [%q]\n", w.sshd.KnownHosts), w.e.Home())
	cm := w.e.Home(".local", "cm")
	os.MkdirAll(filepath.Dir(cm), 0o700)
	// The master stays the test's child (no -f), so that the test's end
	// kills it, and with it its session on the host, however the test
	// ends.
	master := w.e.Command("ssh", append([]string{"-M", "-S", cm, "-N"}, w.sshd.SSHArgs(w.sshd.Target())...)...)
	var masterErr syncbuf.Buffer
	master.Stderr = &masterErr
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { master.Wait(); close(exited) }()
	t.Cleanup(func() { master.Process.Kill(); <-exited })
	check := "ssh -F /dev/null -S " + cm + " -O check x"
	for deadline := time.Now().Add(30 * time.Second); w.e.Run("sh", "-c", check).Code != 0; sleep10ms() {
		select {
		case <-exited:
			t.Fatalf("the ControlMaster exited: %v\n%s", master.ProcessState, masterErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ControlMaster did not start:\n%s", masterErr.String())
		}
	}
	editor := w.e.Path("editor.sock")
	l, err := net.Listen("unix", editor)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // connections wait in its backlog: connect succeeds
	connect := `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" `
	d := w.e.StartRun("coder")
	mustBeRefused(t, d, []escape{
		{"the person's ControlMaster", check},
		{"a socket in the working directory", connect + editor},
		{"removing the hidden socket", "rm -f " + editor},
	})
	mustSucceed(t, "the run's own socket", d.Do("ssh-add -l"))
	mustSucceed(t, "a socket the run makes", d.Do(`python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind('own.sock'); s.listen(); c=socket.socket(socket.AF_UNIX); c.connect('own.sock')"`))
	// Outside the run, both still answer.
	w.e.MustRun("sh", "-c", check)
	w.e.MustRun("sh", "-c", connect+editor)
}

// A shellTerm is a bash in a real tmux, in the Env's directory: the
// person's terminal.
type shellTerm struct {
	*tmuxServer
	t *testing.T
	e *Env
}

func startShellTerm(t *testing.T, e *Env) *shellTerm {
	need(t, "tmux", "setsid", "bash")
	// No history file: bash writes it as it exits, which it does after
	// the test's end began, and so into a home being removed.
	env := "env -i " + strings.Join(e.Environ(), " ") + " HISTFILE="
	return &shellTerm{t: t, e: e, tmuxServer: startTmux(t, e, 120, 40, env+" bash --norc --noprofile", "-c", e.Dir)}
}

// waitFor waits for cond, and shows the terminal when it never holds.
func (s *shellTerm) waitFor(what string, cond func() bool) {
	s.t.Helper()
	for range 1500 {
		if cond() {
			return
		}
		sleep10ms()
	}
	s.t.Fatalf("%s: not seen in 15s:\n%s", what, s.screen())
}

// typed types line at the shell and waits until the shell ran it (it
// printed what it echoes), or the file stolen holds something.
func (s *shellTerm) typed(line, stolen string) {
	s.t.Helper()
	s.keys("echo "+line, "Enter")
	s.waitFor("the shell ran it", func() bool {
		b, _ := os.ReadFile(stolen)
		return len(b) > 0 || strings.Contains(s.screen(), "\n"+line)
	})
	if b, _ := os.ReadFile(stolen); len(b) > 0 {
		s.t.Fatalf("the run read what the person typed at the shell: %q\n%s", b, s.screen())
	}
}

// thief is a run's command that leaves its process group and session
// (setsid) and reads its standard input into the file stolen, while the
// run goes on.
const thief = `postern run -- sh -c 'setsid -f sh -c "exec cat > stolen"; touch started; while :; do sleep 1; done'`

// startAtShell types line at a shell, with a gateway running, and waits
// until the file "started" appears in the working directory.
func startAtShell(t *testing.T, line string) (*shellTerm, *Env) {
	e := newEnv(t)
	e.Config("")
	e.StartAgent()
	sh := startShellTerm(t, e)
	sh.keys(line, "Enter")
	sh.waitFor("the run started", func() bool { _, err := os.Stat(e.Path("started")); return err == nil })
	return sh, e
}

// With tostop set on the person's terminal, a job in the background may
// not write to it: neither may a confined run there (it would paint
// over what the person runs at the shell meanwhile, an approval console
// among it) until it is brought to the foreground.
func TestBackgroundRunWritesNothingWithTostop(t *testing.T) {
	mostlyWaits(t)
	sh, _ := startAtShell(t, `stty tostop; postern run -- sh -c 'touch started; sleep 1; echo from-the-run-$((6*7)); while :; do sleep 1; done' &`)
	sh.typed("at-the-shell", "")
	time.Sleep(2 * time.Second)
	wrote := func() bool { return strings.Contains(sh.screen(), "from-the-run-42") }
	if wrote() {
		t.Fatalf("the run in the background wrote to the person's terminal, tostop set:\n%s", sh.screen())
	}
	sh.keys("fg", "Enter")
	sh.waitFor("the run's output, in the foreground", wrote)
	sh.prompted("the run ended", "C-c")
}

// startThief starts the thief at a shell (then + " &": in the
// background), and returns the shell and the file the thief fills.
func startThief(t *testing.T, then string) (*shellTerm, string) {
	sh, e := startAtShell(t, thief+then)
	return sh, e.Path("stolen")
}

// raw reports whether the shell's terminal is raw (not canonical): at
// the shell's prompt, its line editor makes it so.
func (s *shellTerm) raw() bool {
	tty := strings.TrimSpace(s.run("display-message", "-p", "#{pane_tty}").Stdout)
	return strings.Contains(s.e.Run("stty", "-F", tty, "-a").Stdout, " -icanon")
}

// prompted waits for the shell's next prompt after what keys do.
func (s *shellTerm) prompted(what string, keys ...string) {
	s.t.Helper()
	prompts := strings.Count(s.screen(), "bash-5.2#")
	s.keys(keys...)
	s.waitFor(what, func() bool { return strings.Count(s.screen(), "bash-5.2#") > prompts })
}

// toTheRun types a line for the run, brought to the foreground, and
// waits until the thief read it: what the person types there is the
// run's.
func (s *shellTerm) toTheRun(stolen string) {
	s.t.Helper()
	time.Sleep(200 * time.Millisecond)
	s.keys("to-the-run", "Enter")
	s.waitFor("the run read what was typed", func() bool { b, _ := os.ReadFile(stolen); return strings.Contains(string(b), "to-the-run") })
}

// A program of a confined run that left the run's process group (setsid)
// would, were it given the person's terminal, read it with no job
// control (the terminal is not its controlling one): once the person
// suspends the run (Ctrl-Z), it would read what the person types at the
// shell. Suspending the run stops every process of it, and fg resumes
// them.
func TestSuspendedRunReadsNothing(t *testing.T) {
	sh, stolen := startThief(t, "")
	sh.keys("C-z")
	sh.waitFor("the job stopped", func() bool { return strings.Contains(sh.screen(), "Stopped") })
	sh.typed("typed-at-the-shell", stolen)
	sh.keys("fg", "Enter")
	sh.waitFor("the job in the foreground, its terminal raw", func() bool {
		return strings.Contains(sh.screen(), "postern run --") && strings.Count(sh.screen(), "fg") == 1 && sh.raw()
	})
	sh.toTheRun(stolen)
}

// A run started in the background (&) goes on while the person types at
// the shell, and nothing of it reads what is typed there: its programs
// hold a terminal of the run's own, not the person's. Brought to the
// foreground (with no signal: the shell only hands it the terminal), it
// gets what the person types; Ctrl-C reaches its program as on any
// terminal. A run that ends gives the terminal back as it was.
func TestBackgroundRunReadsNothing(t *testing.T) {
	sh, stolen := startThief(t, " &")
	for _, line := range []string{"first-typed", "second-typed", "third-typed"} {
		sh.typed(line, stolen)
	}
	sh.keys("fg", "Enter")
	sh.waitFor("the job in the foreground, its terminal raw", func() bool {
		return strings.Count(sh.screen(), "\npostern run --") == 1 && sh.raw()
	})
	sh.toTheRun(stolen)
	// Keys typed as the run ends may still reach it, as on any
	// terminal whose program reads ahead: the next line waits for the
	// prompt.
	sh.prompted("the run ended", "C-c")
	// A run in the foreground from its start, which ends once it read a
	// line: the shell adopts the terminal's modes as the run left them.
	sh.keys(`postern run -- sh -c 'read x; echo "the run read $x"'`, "Enter")
	sh.prompted("the run ended", "a-line", "Enter")
	if !strings.Contains(sh.screen(), "\nthe run read a-line") {
		t.Fatalf("the run did not read its line:\n%s", sh.screen())
	}
	sh.keys(`echo back-with-$(stty -a | tr ' ;' '\n\n' | grep -c -x -e icanon -e isig -e echo -e opost)-modes`, "Enter")
	sh.waitFor("the shell back, its terminal as it was", func() bool { return strings.Contains(sh.screen(), "\nback-with-4-modes") })
}

// A run whose standard input, output and error are no terminal still
// has a controlling terminal: opened (/dev/tty) and kept past a setsid, it
// would read the person's terminal from the background. The run's
// controlling terminal is its own: nothing is read at the shell.
func TestBackgroundRunWithoutTerminalReadsNothing(t *testing.T) {
	sh, e := startAtShell(t, `postern run -- sh -c 'exec 3</dev/tty; setsid -f sh -c "exec cat <&3 > stolen"; touch started; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &`)
	stolen := e.Path("stolen")
	for _, line := range []string{"first-typed", "second-typed", "third-typed"} {
		sh.typed(line, stolen)
	}
	sh.keys("fg", "Enter")
	sh.waitFor("the job in the foreground, its terminal raw", func() bool { return strings.Count(sh.screen(), "\npostern run --") == 1 && sh.raw() })
	sh.toTheRun(stolen)
	sh.prompted("the run ended", "C-c")
}

// A program that ignores Ctrl-Z (the signal its terminal sends) is
// stopped all the same, with the whole run, as the terminal asked: the
// person gets the shell back, and fg continues it.
func TestRunIgnoringCtrlZStopsAllTheSame(t *testing.T) {
	sh, e := startAtShell(t, `postern run -- sh -c "trap '' TSTP; touch started; while :; do date +%s%N > ticks; sleep 0.1; done"`)
	sh.keys("C-z")
	sh.waitFor("the job stopped", func() bool { return strings.Contains(sh.screen(), "Stopped") })
	ticks := string(mustRead(t, e.Path("ticks")))
	time.Sleep(300 * time.Millisecond)
	if now := string(mustRead(t, e.Path("ticks"))); now != ticks {
		t.Fatalf("the stopped run goes on: %q, then %q", ticks, now)
	}
	sh.keys("fg", "Enter")
	sh.waitFor("the run going on", func() bool { return string(mustRead(t, e.Path("ticks"))) != ticks })
	sh.prompted("the run interrupted", "C-c")
}

// A confined run whose input is no terminal has a terminal of its own
// all the same: its output goes there, and a program that asks its
// controlling terminal (/dev/tty, as ssh asks for a password) gets what
// the person types; Ctrl-C reaches it.
func TestRunWithPipedInputReadsItsTerminal(t *testing.T) {
	sh, _ := startAtShell(t, `true | postern run -- sh -c 'touch started; [ -t 1 ] && echo own-terminal; read x </dev/tty; echo "the terminal said $x"; exec sleep 60'`)
	sh.waitFor("the run's output", func() bool { return strings.Contains(sh.screen(), "\nown-terminal") })
	sh.keys("an-answer", "Enter")
	sh.waitFor("the run read its terminal", func() bool { return strings.Contains(sh.screen(), "\nthe terminal said an-answer") })
	sh.prompted("the run interrupted", "C-c")
}

// A .git that is a symbolic link in the working directory cannot be shown
// read-only (nothing mounts on a link), and a run could point it at a
// repository of its own: postern run refuses, names the link and how to
// replace it. With a "gitdir:" file in its place, the run starts and the
// file is read-only.
func TestConfinedRunRefusesLinkedGitDir(t *testing.T) {
	e, _ := newGitEnv(t)
	real := e.Path("real.git")
	e.MustRun("sh", "-c", "git init -q -b main --separate-git-dir="+real+" . && rm .git && ln -s "+real+" .git && git status -s >/dev/null")
	marker := e.Path("ran")
	r := e.Run("postern", "run", "--", "touch", marker)
	if r.Code != 1 || !strings.Contains(r.Stderr, e.Path(".git")+" is reached through a symbolic link") || !strings.Contains(r.Stderr, "gitdir:") {
		t.Fatalf("postern run with a linked .git: %s", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
	// What the hint says to do.
	e.MustRun("sh", "-c", "rm .git && echo gitdir: "+real+" > .git && git status -s >/dev/null")
	planted := e.Path("planted")
	d := e.StartRun("coder")
	mustBeRefused(t, d, []escape{{"pointing the .git file elsewhere",
		"git init -q evil && git -C evil config core.fsmonitor 'touch " + planted + "' && echo gitdir: $PWD/evil/.git > .git"}})
	e.MustRun("git", "status", "-s")
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the person's git status ran what the run wrote")
	}
}

// A run started in a workspace of clones (the working directory itself no
// repository) cannot plant in any of them what the person's git runs, and
// still commits in each.
func TestConfinedRunCannotPlantInAWorkspace(t *testing.T) {
	e, git := newGitEnv(t)
	for _, r := range []string{"one", "team/two"} {
		e.MustRun("sh", "-c", "git init -q -b main "+r+" && "+git+"-C "+r+" commit -q --allow-empty -m first")
	}
	// A submodule deeper than the search, its git directory in its work
	// tree (git submodule add of a repository already there).
	e.MustRun("sh", "-c", "cd one && git init -q -b main vendor/x/lib && "+git+"-C vendor/x/lib commit -q --allow-empty -m l && "+
		git+"submodule add -q ./vendor/x/lib vendor/x/lib && "+git+"commit -qm lib")
	planted := e.Path("planted")
	d := e.StartRun("coder")
	mustSucceed(t, "commits in each clone", d.Do(git+"-C one commit -q --allow-empty -m second && "+git+"-C team/two commit -q --allow-empty -m second"))
	mustBeRefused(t, d, []escape{
		{"a clone's core.fsmonitor", "git -C one config core.fsmonitor 'touch " + planted + "'"},
		{"a nested clone's hook", "printf '#!/bin/sh\\ntouch " + planted + "\\n' > team/two/.git/hooks/pre-commit && chmod +x team/two/.git/hooks/pre-commit"},
		{"a deep submodule's core.fsmonitor", "git -C one/vendor/x/lib config core.fsmonitor 'touch " + planted + "'"},
	})
	e.MustRun("sh", "-c", "git -C one status -s && "+git+"-C team/two commit -q --allow-empty -m third")
	if _, err := os.Stat(planted); err == nil {
		t.Fatal("the person's git ran what the run wrote")
	}
}

// An answer from the terminal a run was started from is refused, the run
// in the background: what the run prints reaches that terminal, where it
// could pass for the gateway's own words. The person answers from another
// terminal, and the run goes on.
func TestAnswerFromTheRunsTerminalIsRefused(t *testing.T) {
	w := newApprovalWorld(t, "")
	sh := startShellTerm(t, w.e)
	sh.keys("postern run -- "+sshCmd(w.sshd)+" > login.out 2>&1 &", "Enter")
	c := w.e.WaitCard()
	sh.keys("postern approve "+c.ID+" --session; echo approve-exit=$?", "Enter")
	sh.waitFor("the answer refused", func() bool { return strings.Contains(sh.screen(), "approve-exit=254") })
	if !strings.Contains(sh.screen(), "terminal session") {
		t.Fatalf("refused, but not for the terminal session:\n%s", sh.screen())
	}
	if n := w.accepted(); n != 0 {
		t.Fatalf("%d logins after the refused answer", n)
	}
	w.approve(c.ID, "--session")
	sh.keys("wait; echo run-exit=$?", "Enter")
	sh.waitFor("the run ended", func() bool { return strings.Contains(sh.screen(), "\nrun-exit=") })
	if !strings.Contains(sh.screen(), "\nrun-exit=0") || w.accepted() != 1 {
		t.Fatalf("the run approved from another terminal did not log in:\n%s\n%s", sh.screen(), mustRead(t, w.e.Path("login.out")))
	}
}

// A run cannot lock the person out of their servers with keys of its
// own: ssh offers the agent's keys in the order listed, and sshd ends a
// login after MaxAuthTries refused ones (6). The run's keys, added before
// the person's vault was unlocked again, are listed after the person's;
// and a run adds at most 32.
func TestRunsKeysDoNotCrowdOutThePersons(t *testing.T) {
	w := newApprovalWorld(t, `approval = "none"`)
	d := w.e.StartRun("coder")
	for i := range 10 {
		mustSucceed(t, "the run adds a key of its own", d.Do("ssh-add "+w.e.Keygen(fmt.Sprintf("run-%d", i), "ed25519", 0, "")))
	}
	w.e.MustRun("postern", "lock")
	w.e.MustRun("postern", "unlock", "--passphrase-file", w.pass)
	if l := strings.Fields(w.e.MustRun("ssh-add", "-l").Stdout); len(l) < 2 || l[1] != fingerprint(t, w.e, w.key) {
		t.Fatalf("the person's key is not listed first to the person:\n%s", strings.Join(l, " "))
	}
	mustSucceed(t, "the person's login", w.e.Run("sh", "-c", sshCmd(w.sshd)))
	for i := 10; i < 32; i++ {
		mustSucceed(t, "the run adds a key of its own", d.Do("ssh-add "+w.e.Keygen(fmt.Sprintf("run-%d", i), "ed25519", 0, "")))
	}
	if r := d.Do("ssh-add " + w.e.Keygen("run-32", "ed25519", 0, "")); r.Code == 0 {
		t.Fatalf("the run added a 33rd key: %s", r)
	}
	w.agent.WaitLog(t, "a run adds at most 32 keys")
}
