package procid

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the client process: with PROCID_TEST_CLIENT
// set it connects to the socket, writes one byte, waits for one byte and
// then either exits or execs /bin/sleep with the connection still open.
// The client of mode "leaderexit" ends its main thread alone: the main
// goroutine must run on it, as an init function that locks it makes sure.
func init() {
	if os.Getenv("PROCID_TEST_MODE") == "leaderexit" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if sock := os.Getenv("PROCID_TEST_CLIENT"); sock != "" {
		runClient(sock, os.Getenv("PROCID_TEST_MODE"))
		return
	}
	os.Exit(m.Run())
}

func runClient(sock, mode string) {
	switch mode {
	case "middle":
		runMiddle()
	case "twice":
		connectTwice(sock)
	case "sleeping-connected":
		// Connected, and then nothing more.
		if _, err := net.Dial("unix", sock); err != nil {
			os.Exit(3)
		}
		time.Sleep(30 * time.Second)
		os.Exit(0)
	case "sleeping":
		time.Sleep(30 * time.Second)
		os.Exit(0)
	case "probe":
		// Connected, closed, gone: a look at whether anything listens.
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(3)
		}
		c.Close()
		os.Exit(0)
	case "handoff":
		// Connected, the connection handed to a child that keeps it
		// open for 10 s, gone.
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(3)
		}
		f, _ := c.(*net.UnixConn).File()
		child := exec.Command("/bin/sleep", "10")
		child.ExtraFiles = []*os.File{f}
		if child.Start() != nil {
			os.Exit(3)
		}
		os.Exit(0)
	case "bigexit":
		// Half a gigabyte in use, which its exit takes a while to free.
		big := make([]byte, 512<<20)
		for i := 0; i < len(big); i += 4096 {
			big[i] = 1
		}
		bigexit = big
	case "connectagain":
		// After an exec: a second connection, from the new program.
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(3)
		}
		c.Write([]byte{2})
		time.Sleep(30 * time.Second)
		os.Exit(0)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		os.Exit(3)
	}
	c.Write([]byte{1})
	var b [1]byte
	c.Read(b[:])
	switch mode {
	case "exec":
		f, _ := c.(*net.UnixConn).File()
		unix.FcntlInt(f.Fd(), unix.F_SETFD, 0)
		unix.Exec("/bin/sleep", []string{"sleep", "30"}, os.Environ())
	case "execconnect":
		execSelf(mode, "connectagain")
	case "execself":
		// The same program, the same arguments, an environment of the
		// same size: without address space randomization, the same
		// layout too.
		execSelf(mode, "sleeping")
	case "leaderexit":
		// The main thread exits alone (exit, not exit_group), as it
		// does while another thread executes a program; the process
		// lives on in its other threads (the Go runtime's) until killed.
		unix.Syscall(unix.SYS_EXIT, 0, 0, 0)
	case "touched":
		// Told that its executable changed: a second connection.
		if d, err := net.Dial("unix", sock); err == nil {
			d.Write([]byte{1})
			time.Sleep(30 * time.Second)
		}
	}
	os.Exit(0)
}

// bigexit keeps the memory of the "bigexit" client in use.
var bigexit []byte

// execSelf executes the test binary again, its mode changed from mode to
// next.
func execSelf(mode, next string) {
	env := os.Environ()
	for i, kv := range env {
		if kv == "PROCID_TEST_MODE="+mode {
			env[i] = "PROCID_TEST_MODE=" + next
		}
	}
	unix.Exec(os.Args[0], os.Args, env)
}

func startClient(t *testing.T, mode string) (*exec.Cmd, *net.UnixConn) {
	t.Helper()
	l, sock := listenTemp(t)
	defer l.Close()
	return connectClient(t, l, sock, mode, os.Args[0])
}

// dialAccept connects to l at sock and returns both ends; they are
// closed when the test ends.
func dialAccept(t *testing.T, l *net.UnixListener, sock string) (client net.Conn, server *net.UnixConn) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// listenTemp listens on a socket in a temporary directory, with the
// senders' credentials passed, and returns it with its path; it is closed
// when the test ends. Accepting waits at most a minute.
func listenTemp(t *testing.T) (*net.UnixListener, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := PassCredentials(l); err != nil {
		t.Fatal(err)
	}
	l.SetDeadline(time.Now().Add(time.Minute))
	return l, sock
}

// verifiedPeer identifies the peer of c, checks that Verify holds, and
// closes it when the test ends.
func verifiedPeer(t *testing.T, c *net.UnixConn) *Peer {
	t.Helper()
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	return p
}

// connectClient runs argv, the test binary or a command that executes it,
// as a client of sock (mode as in runClient), and returns the connection
// l accepts from it.
func connectClient(t *testing.T, l *net.UnixListener, sock, mode string, argv ...string) (*exec.Cmd, *net.UnixConn) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PROCID_TEST_CLIENT="+sock, "PROCID_TEST_MODE="+mode)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return cmd, c
}

func TestPeerOfRealProcess(t *testing.T) {
	cmd, c := startClient(t, "exit")
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.PID != cmd.Process.Pid || p.PPID != os.Getpid() || p.UID != uint32(os.Getuid()) {
		t.Fatalf("peer = %+v, want pid %d", p.Process, cmd.Process.Pid)
	}
	self, _ := os.Executable()
	if p.Exe.Path != self || p.Exe.Hash() == "" {
		t.Fatalf("exe = %+v, want %s", p.Exe, self)
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	sc := NewSenderConn(c)
	var b [1]byte
	if _, err := sc.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	if pid, known := sc.Sender(); !known || pid != p.PID {
		t.Fatalf("sender = %d (known %v), want %d", pid, known, p.PID)
	}
	c.Write([]byte{1})
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("exit of the peer not noticed")
	}
	if err := p.Verify(); !errors.Is(err, ErrGone) {
		t.Fatalf("Verify after exit = %v, want ErrGone", err)
	}
}

// The exit watch (WatchGone's) calls back when the peer exits, and not
// after stop: a watch for the length of a wait, which leaves nothing
// behind.
func TestWatchExit(t *testing.T) {
	_, c := startClient(t, "exit")
	p, err := Host.PeerOf(c)
	if err != nil {
		t.Fatal(err)
	}
	stopped := p.pin.watchExit(func() { t.Error("a stopped watch called back") })
	if stopped == nil {
		t.Fatal("no watch")
	}
	stopped()
	exited := make(chan struct{})
	stop := p.pin.watchExit(func() { close(exited) })
	p.Close() // the watch holds a descriptor of its own
	c.Write([]byte{1})
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("exit of the peer not noticed")
	}
	stop()
	if p.pin.watchExit(func() {}) != nil {
		t.Fatal("a closed pin was watched")
	}
}

// WatchGone sees an exec, which gives no signal, and an exit, and says
// which it saw; a stopped watch never calls back.
func TestWatchGone(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want error
	}{{"exec", ErrChanged}, {"exit", ErrGone}} {
		t.Run(tc.mode, func(t *testing.T) {
			_, c := startClient(t, tc.mode)
			p, err := Host.PeerOf(c)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			p.WatchGone(func(error) { t.Error("a stopped watch called back") })()
			gone := make(chan error, 1)
			stop := p.WatchGone(func(why error) { gone <- why; close(gone) }) // closed twice: a panic
			defer stop()
			var b [1]byte
			c.Read(b[:])
			c.Write([]byte{1})
			select {
			case why := <-gone:
				if !errors.Is(why, tc.want) {
					t.Fatalf("%s of the peer told as %v, want %v", tc.mode, why, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s of the peer not noticed", tc.mode)
			}
			time.Sleep(3 * RecheckEvery) // no second call meanwhile
		})
	}
}

func TestPeerExecIsANewProcess(t *testing.T) {
	_, c := startClient(t, "exec")
	p := verifiedPeer(t, c)
	var b [1]byte
	c.Read(b[:])
	c.Write([]byte{1})
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.Verify()
		if errors.Is(err, ErrChanged) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("Verify after exec = %v, want ErrChanged", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Same pid, same start time: only the executable tells.
	st, err := Host.Stat(p.PID)
	if err != nil || st.StartTicks != p.StartTicks {
		t.Fatalf("start time after exec: %v %v", st, err)
	}
}

func TestSenderOfInheritedSocket(t *testing.T) {
	// A process connects, then hands the connection to a child that writes:
	// the kernel names the child as the sender.
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	PassCredentials(l)
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f, _ := client.(*net.UnixConn).File()
	child := exec.Command("/bin/sh", "-c", "printf x >&3")
	child.ExtraFiles = []*os.File{f}
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	sc := NewSenderConn(srv)
	var b [1]byte
	if _, err := sc.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	pid, known := sc.Sender()
	if !known || pid == os.Getpid() || pid != child.ProcessState.Pid() {
		t.Fatalf("sender = %d, want the child %d (not %d)", pid, child.ProcessState.Pid(), os.Getpid())
	}
	// Bytes from two writers in one message are reported as unknown.
	client.Write([]byte("y"))
	sc.Read(b[:])
	if pid, _ := sc.Sender(); pid != -1 {
		t.Fatalf("mixed senders reported as %d", pid)
	}
	sc.ResetSenders()
	client.Write([]byte("z"))
	sc.Read(b[:])
	if pid, _ := sc.Sender(); pid != os.Getpid() {
		t.Fatalf("after reset, sender = %d want %d", pid, os.Getpid())
	}
}

// An exec of the very same program on the same pid — the same
// executable, pid and start time — is a new process too: the address
// space held since the peer was pinned is gone. Run once with address
// space randomization, and once without it (setarch -R), where the new
// program's layout is the old one and only the held address space tells.
func TestPeerExecOfTheSameProgramIsANewProcess(t *testing.T) {
	for _, norand := range []bool{false, true} {
		argv := []string{os.Args[0]}
		if norand {
			setarch, err := exec.LookPath("setarch")
			if err != nil {
				t.Fatal("setarch is not installed (util-linux)")
			}
			argv = []string{setarch, archName(), "-R", os.Args[0]}
		}
		sock := filepath.Join(t.TempDir(), "s")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		PassCredentials(l)
		cmd, c := connectClient(t, l, sock, "execself", argv...)
		l.Close()
		var b [1]byte
		c.Read(b[:])
		p, err := Host.PeerOf(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Verify(); err != nil {
			t.Fatal(err)
		}
		before := p.Layout
		exe := p.Exe
		c.Write([]byte{1})
		deadline := time.Now().Add(10 * time.Second)
		var verr error
		for {
			verr = p.Verify()
			// Caught while the exec is under way (its main thread gone,
			// see TestPeerWithoutItsMainThreadHasChanged): look again
			// once the new program runs.
			midExec := verr != nil && strings.Contains(verr.Error(), "shows no executable while it lives")
			if verr != nil && !midExec || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !errors.Is(verr, ErrChanged) {
			t.Fatalf("norand=%v: Verify after an exec of the same program = %v, want ErrChanged", norand, verr)
		}
		// Same pid, same start time, same executable.
		now, err := Host.Inspect(cmd.Process.Pid)
		if err != nil || now.StartTicks != p.StartTicks || !now.Exe.Same(exe) {
			t.Fatalf("after the exec: %+v %v", now, err)
		}
		if norand {
			if now.Layout != before {
				t.Logf("the layout changed too: %+v -> %+v", before, now.Layout)
			} else if !strings.Contains(verr.Error(), "new address space") {
				t.Fatalf("only the held address space could tell, but: %v", verr)
			}
		}
		p.Close()
	}
}

// A process whose main thread has exited while its other threads live
// shows no executable, which is what an exec by a thread other than the
// main one looks like until the new program takes the main thread's
// place: Verify says the process changed, not that it is gone (it is
// not: its pidfd says so). Before, Verify said "gone" there, and a
// requester that executed another program from such a thread was
// sometimes withdrawn as gone (canceled) instead of changed.
func TestPeerWithoutItsMainThreadHasChanged(t *testing.T) {
	l, sock := listenTemp(t)
	cmd, c := connectClient(t, l, sock, "leaderexit", os.Args[0])
	var b [1]byte
	c.Read(b[:])
	p := verifiedPeer(t, c)
	c.Write([]byte{1})
	verr := verifyUntilItFails(p)
	if !errors.Is(verr, ErrChanged) {
		t.Fatalf("Verify of a process whose main thread exited = %v, want ErrChanged", verr)
	}
	if !p.Alive() || unix.Kill(cmd.Process.Pid, 0) != nil {
		t.Fatal("the process is gone: the test did not see a main thread exit alone")
	}
	if _, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "exe")); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("its executable shows (%v): the main thread did not exit", err)
	}
}

// A process that exits shows no executable from its main thread's exit
// until its last thread's, which frees its memory first: Verify says it
// is gone, not that it executed another program. Before, a check that
// came in that moment (tens of milliseconds for a large process) said it
// changed, and its run ended as if it had executed another program.
func TestExitingPeerIsGone(t *testing.T) {
	_, c := startClient(t, "bigexit")
	var b [1]byte
	c.Read(b[:])
	p := verifiedPeer(t, c)
	c.Write([]byte{1})
	verr := verifyUntilItFails(p)
	if !errors.Is(verr, ErrGone) {
		t.Fatalf("Verify of a process that exits = %v, want ErrGone", verr)
	}
}

// verifyUntilItFails verifies p again and again, for at most 10 s, and
// returns the first failure.
func verifyUntilItFails(p *Peer) error {
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		err = p.Verify()
	}
	return err
}

// archName is the machine name setarch takes.
func archName() string {
	var u unix.Utsname
	unix.Uname(&u)
	return unix.ByteSliceToString(u.Machine[:])
}
