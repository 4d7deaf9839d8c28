package procid

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdmit runs the test binary as a client (see TestMain) twice: as this
// process's user, which Admit lets in, and through setpriv as uid 65534,
// which it refuses and logs; and again with AdmitCred. The socket and the binary are opened to
// everyone on purpose, so that only Admit stands between the other user
// and the server.
func TestAdmit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests): it runs a client as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv is not installed; .ci/run installs it (util-linux)")
	}
	dir, err := os.MkdirTemp("", "procid-admit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o666)

	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	// Admit reads the credentials itself; AdmitCred takes those PeerCred
	// read, as a server that counts connections per user does.
	for _, withCred := range []bool{false, true} {
		logged.Reset()
		admit := func(argv ...string) (*exec.Cmd, *Peer, error) {
			t.Helper()
			cmd, c := connectClient(t, l, sock, "exit", argv...)
			if !withCred {
				p, err := Host.Admit(c, "test", log)
				return cmd, p, err
			}
			cred, err := PeerCred(c)
			if err != nil || cred.PID != cmd.Process.Pid {
				t.Fatalf("PeerCred: %+v %v, want pid %d", cred, err, cmd.Process.Pid)
			}
			p, err := Host.AdmitCred(c, cred, "test", log)
			return cmd, p, err
		}

		cmd, p, err := admit(bin)
		if err != nil {
			t.Fatalf("credentials read before %v: a client of the same user was refused: %v", withCred, err)
		}
		if p.PID != cmd.Process.Pid || p.UID != uint32(os.Getuid()) {
			t.Fatalf("admitted %+v, want pid %d", p.Process, cmd.Process.Pid)
		}
		p.Close()
		if logged.Len() != 0 {
			t.Fatalf("an admission was logged as a refusal: %s", logged.String())
		}

		cmd, p, err = admit(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--", bin)
		if !errors.Is(err, ErrOtherUser) || p != nil {
			t.Fatalf("credentials read before %v: a client of uid 65534: peer %v, err %v", withCred, p, err)
		}
		want := fmt.Sprintf(`msg="refusing connection from another user" socket=test uid=65534 pid=%d exe=%s`, cmd.Process.Pid, bin)
		if !strings.Contains(logged.String(), want) {
			t.Fatalf("refusal logged as\n%s\nwant it to contain\n%s", logged.String(), want)
		}
	}
}

// A peer gone before it could be identified is refused either way. When
// nothing is left of its connection (a program that connected only to
// see whether an agent listens, as OpenSSH 10's sshd -i does before it
// executes sshd-session), the refusal is logged as information; when
// another process holds the connection open, as a warning.
func TestAdmitPeerGoneBeforeIdentified(t *testing.T) {
	for _, tc := range []struct{ mode, level, msg string }{
		{"probe", "INFO", "closed before its peer could be identified"},
		{"handoff", "WARN", "cannot identify the peer"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			l, sock := listenTemp(t)
			cmd, c := connectClient(t, l, sock, tc.mode, os.Args[0])
			if err := cmd.Wait(); err != nil {
				t.Fatalf("client: %v", err)
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			if p, err := Host.Admit(c, "test", log); err == nil {
				p.Close()
				t.Fatal("admitted a peer that is gone")
			}
			if out := logged.String(); !strings.Contains(out, "level="+tc.level) || !strings.Contains(out, tc.msg) {
				t.Fatalf("logged %q, want level %s and %q", out, tc.level, tc.msg)
			}
		})
	}
}
