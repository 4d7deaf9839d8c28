package e2e

import (
	"strings"
	"testing"
)

// A card for a git commit signature shows the commit it signs and the
// repository it is signed in: the agent is sent only the message's
// hash, and the file git names on ssh-keygen's command line, whose hash
// is that very hash, is the message, shown escaped, with the directory
// ssh-keygen runs in (git's work tree), as the kernel gives it. A message that no file named has (ssh-keygen
// reading it from its standard input) is said to be unknown. A relative
// name is looked up in ssh-keygen's directory.
func TestSignatureCardShowsTheCommitItSigns(t *testing.T) {
	need(t, "git")
	w := newApprovalWorld(t, "")
	pub := pubKey(t, w.key)
	w.e.MustRun("git", "init", "-q", "-b", "main", w.e.Path("repo"))
	git := "git -c user.name=t -c user.email=t@example.com -c gpg.format=ssh -c user.signingkey='key::" + pub + "' "
	a := w.e.StartRun("coder")
	job := a.Start("cd repo && " + git + "commit -q --allow-empty -S -m 'fix the \x1b[31mparser' 2>&1")
	c := w.e.WaitCard()
	text := w.e.MustRun("postern", "approve", "--list").Stdout
	w.approve(c.ID, "--once")
	mustSucceed(t, "git commit -S", job.Wait())
	for _, want := range []string{"\nMessage: /tmp/.git_signing_buffer_tmp", " bytes, hash as signed), signed in " + w.e.Path("repo") + ":\n  | author t <t@example.com> ", "\n  | fix the \\x1b[31mparser\n"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the card of a commit signature does not show %q of the commit:\n%s", want, text)
		}
	}
	w.e.WriteFile("id.pub", pub+"\n", 0o644)
	job = a.Start("echo hi | ssh-keygen -Y sign -n file -f " + w.e.Path("id.pub"))
	c = w.e.WaitCard()
	text = w.e.MustRun("postern", "approve", "--list").Stdout
	w.approve(c.ID, "--once")
	mustSucceed(t, "ssh-keygen -Y sign from standard input", job.Wait())
	if !strings.Contains(text, "\nMessage: not known: no file the command line names has the hash signed\n") {
		t.Fatalf("the card of a signature of a message no file holds:\n%s", text)
	}
	// A relative name is the file in the directory ssh-keygen runs in.
	w.e.WriteFile("repo/note.txt", "a note in the repository\n", 0o644)
	job = a.Start("cd repo && ssh-keygen -Y sign -n file -f " + w.e.Path("id.pub") + " note.txt")
	c = w.e.WaitCard()
	text = w.e.MustRun("postern", "approve", "--list").Stdout
	w.approve(c.ID, "--once")
	mustSucceed(t, "ssh-keygen -Y sign of a file named relative", job.Wait())
	if !strings.Contains(text, "\nMessage: "+w.e.Path("repo/note.txt")+" (25 bytes, hash as signed):\n  | a note in the repository\n") {
		t.Fatalf("the card of a signature of a file named relative to ssh-keygen's directory:\n%s", text)
	}
}
