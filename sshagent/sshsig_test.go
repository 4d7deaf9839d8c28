package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/approvals"
	"github.com/postern/postern/audit"
)

// The agent signs as an SSHSIG signature only what ssh-keygen -Y sign
// sends and -Y verify accepts: a SHA-256 or SHA-512 hash of the message,
// of that hash's length. Anything else framed as one (another algorithm,
// a hash of another length, a field of any size the card does not show)
// is refused before any card, as malformed.
func TestSSHSigOnlyAsSSHKeygenSigns(t *testing.T) {
	ts := startServer(t)
	dir := t.TempDir()
	run := ts.runner(t)
	key := filepath.Join(dir, "id")
	run("", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "signer", "-f", key)
	run("", "ssh-add", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(dir, "allowed_signers")
	if err := os.WriteFile(signers, append([]byte("me "), pub...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"sha512", "sha256"} {
		sig := run("a release", "ssh-keygen", "-Y", "sign", "-n", "file", "-O", "hashalg="+alg, "-f", key+".pub")
		if err := os.WriteFile(key+".sig", []byte(sig), 0o600); err != nil {
			t.Fatal(err)
		}
		run("a release", "ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me", "-n", "file", "-s", key+".sig")
		if r := ts.dec.last(); r.Purpose != approvals.PurposeSSHSig || r.Namespace != "file" {
			t.Fatalf("ssh-keygen -Y sign with %s: %+v", alg, r)
		}
		// The message's hash, recorded, is the one anyone computes of it.
		h := sha512.Sum512([]byte("a release"))
		want := "sha512:" + hex.EncodeToString(h[:])
		if alg == "sha256" {
			h := sha256.Sum256([]byte("a release"))
			want = "sha256:" + hex.EncodeToString(h[:])
		}
		if r := ts.dec.last(); r.MessageHash != want {
			t.Fatalf("ssh-keygen -Y sign with %s: message hash %q, want %q", alg, r.MessageHash, want)
		}
	}

	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	ag.Add(agent.AddedKey{PrivateKey: k})
	signer, _ := ssh.NewPublicKey(k.Public())
	for _, tt := range []struct {
		alg  string
		hash int
		res  string
	}{
		{"sha512", 200 << 10, ""}, // a "hash" of 200 KiB
		{"sha512", 32, ""},
		{"sha256", 64, ""},
		{"md5", 16, ""},
		{"sha512\x1b[2K", 64, ""},
		// The reserved field, which ssh-keygen sends empty and -Y
		// verify puts back empty: 200 KiB of anything, or a short
		// text, signed under a card that shows neither.
		{"sha512", 64, strings.Repeat("x", 200<<10)},
		{"sha256", 32, "\x1b]0;approved\a"},
	} {
		asked := ts.dec.count()
		if _, err := ag.Sign(signer, sshsigBlob("file", tt.res, tt.alg, tt.hash)); err == nil {
			t.Errorf("signed an SSHSIG blob with hash algorithm %q, a hash of %d bytes and %d bytes in its reserved field, which ssh-keygen neither sends nor verifies (asked as %+v)", tt.alg, tt.hash, len(tt.res), ts.dec.last())
			continue
		}
		if n := ts.dec.count(); n != asked {
			t.Errorf("hash algorithm %q, %d bytes: a card was asked for", tt.alg, tt.hash)
		}
		if why := ts.dec.lastRefusal(); why != audit.ReasonMalformedRequest {
			t.Errorf("hash algorithm %q, %d bytes: refused as %q", tt.alg, tt.hash, why)
		}
		// Its refusal is recorded as what it said it was: a signature.
		ts.dec.mu.Lock()
		purpose := ts.dec.refusedPurpose
		ts.dec.mu.Unlock()
		if purpose != approvals.PurposeSSHSig {
			t.Errorf("hash algorithm %q, %d bytes: refused with purpose %q", tt.alg, tt.hash, purpose)
		}
	}
}

// A card shows a signature's namespace whole: the agent signs in a
// namespace of up to 255 bytes, as ssh-keygen -Y sign -n sends it, and
// refuses a longer one as malformed before any card.
func TestSSHSigNamespaceBounded(t *testing.T) {
	ts := startServer(t)
	run := ts.runner(t)
	key := filepath.Join(t.TempDir(), "id")
	run("", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key)
	run("", "ssh-add", key)
	long := strings.Repeat("n", maxNamespace-len("file")) + "file"
	run("a release", "ssh-keygen", "-Y", "sign", "-n", long, "-f", key+".pub")
	if r := ts.dec.last(); r.Namespace != long {
		t.Fatalf("ssh-keygen -Y sign -n with %d bytes: %+v", len(long), r)
	}
	asked := ts.dec.count()
	cmd := exec.Command("ssh-keygen", "-Y", "sign", "-n", "n"+long, "-f", key+".pub")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+ts.sock)
	cmd.Stdin = strings.NewReader("a release")
	if out, err := cmd.Output(); err == nil {
		t.Fatalf("signed in a namespace of %d bytes: %s", len(long)+1, out)
	}
	if ts.dec.count() != asked || ts.dec.lastRefusal() != audit.ReasonMalformedRequest {
		t.Fatalf("a namespace of %d bytes: asked %d times, refused as %q", len(long)+1, ts.dec.count()-asked, ts.dec.lastRefusal())
	}
}

// A namespace holding a NUL byte is refused as malformed before any card,
// as OpenSSH's agent refuses it (it reads the namespace as a C string, as
// ssh-keygen -Y verify does), where it was signed, the card showing
// "git\x00…", which no verifier would check.
func TestSSHSigNamespaceWithNULIsRefused(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	ag.Add(agent.AddedKey{PrivateKey: k})
	asked := ts.dec.count()
	if _, err := ag.Sign(pub, sshsigBlob("git\x00file", "", "sha512", 64)); err == nil {
		t.Fatal("signed in a namespace holding a NUL byte")
	}
	if ts.dec.count() != asked || ts.dec.lastRefusal() != audit.ReasonMalformedRequest {
		t.Fatalf("asked %d times, refused as %q", ts.dec.count()-asked, ts.dec.lastRefusal())
	}
}

// A signature refused before any decision (the agent locked, the key not
// held) is recorded as what its data says it is: an SSHSIG signature in
// its namespace, as one refused by a decision is, so that the audit log
// and postern why say which signature was refused.
func TestSSHSigRefusedBeforeADecisionIsRecordedAsASignature(t *testing.T) {
	ts := startServer(t)
	ag, _ := ts.client(t)
	keys := make([]ssh.PublicKey, 2)
	for i := range keys {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		keys[i], _ = ssh.NewPublicKey(k.Public())
		if i == 0 {
			ag.Add(agent.AddedKey{PrivateKey: k})
		}
	}
	held, other := keys[0], keys[1]
	// What ssh-keygen -Y sign -n ns sends for a message.
	sign := func(key ssh.PublicKey, ns string) {
		t.Helper()
		if _, err := ag.Sign(key, sshsigBlob(ns, "", "sha512", 64)); err == nil {
			t.Fatalf("signed in namespace %q", ns)
		}
	}
	check := func(what string, reason audit.Reason, ns string) {
		t.Helper()
		ts.dec.mu.Lock()
		defer ts.dec.mu.Unlock()
		if len(ts.dec.refused) == 0 || ts.dec.refused[len(ts.dec.refused)-1] != reason {
			t.Fatalf("%s: refusals recorded %v, want %s last", what, ts.dec.refused, reason)
		}
		if ts.dec.refusedPurpose != approvals.PurposeSSHSig || ts.dec.refusedNamespace != ns {
			t.Errorf("%s: recorded with purpose %q and namespace %q, want %q and %q", what, ts.dec.refusedPurpose, ts.dec.refusedNamespace, approvals.PurposeSSHSig, ns)
		}
	}
	sign(other, "file")
	check("a key the agent does not hold", audit.ReasonKeyNotHeld, "file")
	if err := ag.Lock([]byte("pw")); err != nil {
		t.Fatal(err)
	}
	sign(held, "git")
	check("the agent locked", audit.ReasonVaultLocked, "git")
}

// sshsigBlob is the data an SSHSIG signature signs: the namespace, the
// reserved field, the hash algorithm and a hash of n bytes.
func sshsigBlob(ns, reserved, alg string, n int) []byte {
	return append([]byte("SSHSIG"), ssh.Marshal(struct {
		NS, Res, Alg string
		H            []byte
	}{ns, reserved, alg, make([]byte, n)})...)
}
