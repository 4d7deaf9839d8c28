package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/postern/postern/audit"
)

// Whatever an upstream sends back, postern answers with a failure or a
// shorter list, never a panic or a hang.
func TestUpstreamMalformedReplies(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	idList := append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte("k")})...)
	cases := map[string][][]byte{
		"empty":           {{}},
		"oversized":       {append(binary.BigEndian.AppendUint32(nil, MaxMessage+1), msgSuccess)},
		"count too large": {append([]byte{0, 0, 0, 5, msgIdentitiesAnswer}, 0xff, 0xff, 0xff, 0xff)},
		"truncated list":  {frame(append([]byte{msgIdentitiesAnswer}, 0, 0, 0, 2))},
		"trailing":        {frame(append(append([]byte{}, idList...), 1))},
		"bad key": {frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
			N    uint32
			B, C string
		}{1, "junk", "c"})...))},
		"sign: failure":     {frame(idList), frame([]byte{msgFailure})},
		"sign: garbage sig": {frame(idList), frame(append([]byte{msgSignResponse}, ssh.Marshal(struct{ S string }{"junk"})...))},
		"sign: wrong type":  {frame(idList), frame([]byte{msgIdentitiesAnswer, 0, 0, 0, 0})},
	}
	for name, replies := range cases {
		t.Run(name, func(t *testing.T) {
			sock := scriptedAgent(t, replies)
			ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
			ag, _ := ts.client(t)
			l, err := ag.List()
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if strings.HasPrefix(name, "sign") {
				if len(l) != 1 {
					t.Fatalf("list = %v", l)
				}
				if _, err := ag.Sign(pub, []byte("x")); err == nil {
					t.Fatal("signed with a malformed upstream reply")
				}
				return
			}
			if len(l) != 0 {
				t.Fatalf("list = %v", l)
			}
		})
	}
}

func frame(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }

// scriptedAgent answers each request on a connection with the next of
// replies (raw bytes, framed by the caller), then closes it.
func scriptedAgent(t testing.TB, replies [][]byte) string {
	dir, err := os.MkdirTemp("", "scripted-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for _, r := range replies {
					var hdr [4]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(hdr[:]))); err != nil {
						return
					}
					c.Write(r)
				}
			}()
		}
	}()
	return sock
}

// A signature the upstream agent sends back leaves only when it is the
// one asked for: by the key named, over the data sent, with the
// algorithm the flags chose.
func TestUpstreamSignatureChecked(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	signer, _ := ssh.NewSignerFromKey(k)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(other)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaSigner, _ := ssh.NewSignerFromKey(rsaKey)
	list := func(pub ssh.PublicKey) []byte {
		return frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
			N             uint32
			Blob, Comment []byte
		}{1, pub.Marshal(), []byte("k")})...))
	}
	answer := func(sig *ssh.Signature, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return frame(append([]byte{msgSignResponse}, ssh.Marshal(struct{ S []byte }{ssh.Marshal(sig)})...))
	}
	sha1RSA := func() (*ssh.Signature, error) {
		return rsaSigner.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, []byte("x"), ssh.KeyAlgoRSA)
	}
	cases := []struct {
		name    string
		key     ssh.PublicKey
		flags   agent.SignatureFlags
		replies [][]byte
	}{
		{"another key", pub, 0, [][]byte{list(pub), answer(otherSigner.Sign(rand.Reader, []byte("x")))}},
		{"other data", pub, 0, [][]byte{list(pub), answer(signer.Sign(rand.Reader, []byte("y")))}},
		{"sha-1 for sha-256", rsaSigner.PublicKey(), agent.SignatureFlagRsaSha256, [][]byte{list(rsaSigner.PublicKey()), answer(sha1RSA())}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := scriptedAgent(t, tc.replies)
			ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
			ag, _ := ts.client(t)
			if _, err := ag.List(); err != nil {
				t.Fatalf("list: %v", err)
			}
			if sig, err := ag.SignWithFlags(tc.key, []byte("x"), tc.flags); err == nil {
				t.Fatalf("handed on a signature the upstream made for something else (%s)", sig.Format)
			}
			if r := ts.dec.lastRefusal(); r != audit.ReasonSigningFailed {
				t.Fatalf("refusal %q", r)
			}
		})
	}
	// The one asked for leaves.
	sock := scriptedAgent(t, [][]byte{list(pub), answer(signer.Sign(rand.Reader, []byte("x")))})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	ag.List()
	if _, err := ag.Sign(pub, []byte("x")); err != nil {
		t.Fatalf("sign: %v", err)
	}
}

// A stopped upstream agent lists nothing and gets no sign request.
func TestUpstreamStopped(t *testing.T) {
	up := startUpstream(t)
	k := up.addKey(t, "up")
	ts := startGated(t, up, UpstreamForward)
	ag, _ := ts.client(t)
	if _, err := ag.Sign(k, []byte("x")); err != nil {
		t.Fatalf("sign before the stop: %v", err)
	}
	ts.srv.Upstream.Stop()
	if l, err := ag.List(); err != nil || len(l) != 0 {
		t.Fatalf("list after the stop: %v, %v", l, err)
	}
	if _, err := ag.Sign(k, []byte("x")); err == nil || up.signCount() != 1 {
		t.Fatalf("sign after the stop: %v; the upstream got %d requests", err, up.signCount())
	}
	if err := ag.Remove(k); err == nil || !upstreamHas(up, k) {
		t.Fatalf("removed the upstream's key after the stop: %v", err)
	}
}

// An upstream agent that answers the listing, then reads nothing more,
// fails a large sign request once the wait is over, instead of keeping
// its client waiting for ever.
func TestUpstreamThatStopsReading(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	idList := frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte("k")})...))
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	t.Cleanup(func() { close(stopped); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [5]byte
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				c.Write(idList)
				<-stopped
			}()
		}
	}()
	ts := startServerWith(t, func(s *Server) {
		s.Upstream = &UpstreamAgent{Socket: sock}
		s.TouchTimeout = func() time.Duration { return 100 * time.Millisecond }
	})
	ag, _ := ts.client(t)
	if l, err := ag.List(); err != nil || len(l) != 1 {
		t.Fatalf("list: %v, %v", l, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ag.Sign(pub, make([]byte, MaxMessage-1024))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("signed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sign request still waits for an upstream agent that reads nothing")
	}
}

// An upstream agent whose identities fill a whole reply does not push
// the listing past what ssh-add and ssh read (256 KiB): postern's own
// keys stay listed, and the upstream's that do not fit are left out.
func TestUpstreamListingFits(t *testing.T) {
	if _, err := exec.LookPath("ssh-add"); err != nil {
		t.Fatal("ssh-add is not installed (Debian package openssh-client; .ci/run installs it)")
	}
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	pub, _ := ssh.NewPublicKey(k.Public())
	long := strings.Repeat("c", MaxMessage-len(pub.Marshal())-64)
	idList := frame(append([]byte{msgIdentitiesAnswer}, ssh.Marshal(struct {
		N             uint32
		Blob, Comment []byte
	}{1, pub.Marshal(), []byte(long)})...))
	sock := scriptedAgent(t, [][]byte{idList})
	ts := startServerWith(t, func(s *Server) { s.Upstream = &UpstreamAgent{Socket: sock} })
	ag, _ := ts.client(t)
	_, own, _ := ed25519.GenerateKey(rand.Reader)
	if err := ag.Add(agent.AddedKey{PrivateKey: own, Comment: "own"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-add", "-l")
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+ts.sock)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), " own (ED25519)") {
		t.Fatalf("ssh-add -l: %v\n%s", err, out)
	}
}
