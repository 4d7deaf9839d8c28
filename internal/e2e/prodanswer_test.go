package e2e

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A session answer to a per-call card approves the one call, and the
// person who gave it is told so: postern approve --session, and a
// "session" line read by the piped console, echo "approved once", never
// "approved for the run", and the next login to the production host asks
// again. Each call is recorded as one to prod-db-1, of class production.
func TestSessionAnswerToAPerCallCardSaysItApprovedOnce(t *testing.T) {
	w := newApprovalWorld(t, "", "git-host")
	prodSSHD := startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	w.agent.Reconfigure(t, fmt.Sprintf("known_hosts = [%q, %q]\n[[rule]]\nclass = \"production\"\napproval = \"per-call\"\n", w.sshd.KnownHosts, prodSSHD.KnownHosts))
	w.e.MustRun("postern", "hosts", "import", "prod-db-1", "--class", "production")
	prod := sshCmd(prodSSHD, "-o", "HostKeyAlias=prod-db-1")
	a := w.e.StartRun("coder")

	job := a.Start(prod)
	c := w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("production card: %+v", c)
	}
	out := w.e.MustRun("postern", "approve", c.ID, "--session").Stdout
	if want := c.ID + ": approved once"; strings.TrimSpace(out) != want {
		t.Errorf("postern approve --session on a per-call card printed %q, want %q", strings.TrimSpace(out), want)
	}
	mustSucceed(t, "prod", job.Wait())

	job = a.Start(prod)
	c = w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("second production card: %+v", c)
	}
	if said := pipedAnswer(t, w.e, "session "+c.ID, c.ID); said != c.ID+": approved once" {
		t.Errorf("the piped console's answer \"session %s\" to a per-call card said %q, want %q", c.ID, said, c.ID+": approved once")
	}
	mustSucceed(t, "prod again", job.Wait())

	job = a.Start(prod)
	c = w.e.WaitCard()
	if c.Mode != "per-call" {
		t.Fatalf("third production card: %+v", c)
	}
	w.e.MustRun("postern", "deny", c.ID)
	if r := job.Wait(); r.Code == 0 {
		t.Fatalf("a denied login succeeded: %s", r)
	}
	// Each of the three calls is recorded as a call to prod-db-1, a
	// production host: asked, then approved once on that card, or
	// denied.
	out = w.e.MustRun("postern", "activity", "--passphrase-file", w.pass).Stdout
	want := []string{
		`card_shown card=(C[0-9a-f]+) .* dest=prod-db-1 mode=per-call .*dest_classes=production`,
		`sign run=R[0-9a-f]+ card=CARD .*dest=prod-db-1 mode=per-call .*dest_classes=production`,
		`card_shown card=(C[0-9a-f]+) .* dest=prod-db-1 mode=per-call .*dest_classes=production`,
		`sign run=R[0-9a-f]+ card=CARD .*dest=prod-db-1 mode=per-call .*dest_classes=production`,
		`card_shown card=(C[0-9a-f]+) .* dest=prod-db-1 mode=per-call .*dest_classes=production`,
		`action_denied .* reason=denied dest=prod-db-1 .*dest_classes=production`,
	}
	i, card := 0, ""
	for _, l := range strings.Split(out, "\n") {
		if i == len(want) {
			break
		}
		if m := regexp.MustCompile(strings.ReplaceAll(want[i], "CARD", card)).FindStringSubmatch(l); m != nil {
			if len(m) > 1 {
				card = m[1]
			}
			i++
		}
	}
	if i != len(want) {
		t.Errorf("the record of the production calls lacks %q (in order, the card the one before names):\n%s", want[i], out)
	}
}

// pipedAnswer gives the piped console (postern approve --json) the
// answer line and returns the line it says about card id on its
// standard error.
func pipedAnswer(t *testing.T, e *Env, line, id string) string {
	t.Helper()
	cmd := e.Command("postern", "approve", "--json")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if _, err := in.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errs)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), id+": ") && !strings.HasSuffix(sc.Text(), ": closed") {
				said <- sc.Text()
				return
			}
		}
		close(said)
	}()
	select {
	case s := <-said:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("the piped console said nothing of card %s", id)
	}
	return ""
}

// A production key (a rule by its fingerprint) asks on every commit
// signature, even inside a run approved for the key, on a card that says
// which mark makes it ask: the rule of the configuration and that it
// matched the key. A production host's card names its class rule.
func TestProductionCardSaysWhichMarkAsks(t *testing.T) {
	need(t, "git")
	w, prodSSHD, prodClass, a := productionWorld(t)
	pub := pubKey(t, w.key)
	fp := w.e.MustRun("ssh-keygen", "-lf", w.e.WriteFile("id.pub", pub+"\n", 0o644)).Stdout
	fp = strings.Fields(fp)[1]

	job := a.Start(sshCmd(prodSSHD, "-o", "HostKeyAlias=prod-db-1"))
	c := w.e.WaitCard()
	text := w.e.MustRun("postern", "approve", "--list").Stdout
	w.e.MustRun("postern", "deny", c.ID)
	job.Wait()
	if want := "\nAsked on every call because of: rule 1: class \"production\" (approval = \"per-call\")\n"; c.Mode != "per-call" || !strings.Contains(text, want) {
		t.Errorf("the card of a production host does not say %q:\n%s", strings.TrimSpace(want), text)
	}

	// The key marked production too: the run's session for it covers
	// its signatures no more.
	w.agent.Reconfigure(t, prodClass+fmt.Sprintf("\n[[rule]]\nkey = %q\napproval = \"per-call\"\n", fp))
	w.e.MustRun("git", "init", "-q", "-b", "main", w.e.Path("repo"))
	git := "git -c user.name=t -c user.email=t@example.com -c gpg.format=ssh -c user.signingkey='key::" + pub + "' "
	for i := 0; i < 2; i++ {
		job = a.Start("cd repo && " + git + "commit -q --allow-empty -S -m 'release' 2>&1")
		c = w.e.WaitCard()
		text = w.e.MustRun("postern", "approve", "--list").Stdout
		w.approve(c.ID, "--once")
		mustSucceed(t, "git commit -S", job.Wait())
		if want := fmt.Sprintf("\nAsked on every call because of: rule 2: key %q (approval = \"per-call\")\n", fp); c.Mode != "per-call" || !strings.Contains(text, want) {
			t.Fatalf("commit %d: the card of a production key's signature does not say %q:\n%s", i, strings.TrimSpace(want), text)
		}
	}
}

// productionWorld is an approval world with two hosts in the inventory,
// git-host and prod-db-1 of class production, a configuration (config)
// that asks on every login to a production host, and a run approved for
// a session on a login to git-host.
func productionWorld(t *testing.T) (w *approvalWorld, prod *SSHD, config string, run *Driver) {
	t.Helper()
	w = newApprovalWorld(t, "", "git-host")
	prod = startSSHD(t, pubKey(t, w.key)+"\n", "prod-db-1")
	config = fmt.Sprintf("known_hosts = [%q, %q]\n[[rule]]\nclass = \"production\"\napproval = \"per-call\"\n", w.sshd.KnownHosts, prod.KnownHosts)
	w.agent.Reconfigure(t, config)
	w.e.MustRun("postern", "hosts", "import", "git-host")
	w.e.MustRun("postern", "hosts", "import", "prod-db-1", "--class", "production")
	run = w.e.StartRun("coder")
	job := run.Start(sshCmd(w.sshd, "-o", "HostKeyAlias=git-host"))
	w.approve(w.e.WaitCard().ID, "--session")
	mustSucceed(t, "git-host", job.Wait())
	return w, prod, config, run
}
