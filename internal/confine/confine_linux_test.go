package confine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/postern/postern/internal/ptyrelay"
)

// The test binary plays three parts: the test, the helper (Init), and
// the confined program, which runs probes and prints what each got.

func TestMain(m *testing.M) {
	Init()
	switch os.Getenv("CONFINE_TEST_MODE") {
	case "probe":
		probeMain(os.Args[1:])
		return
	case "start":
		startMain()
		return
	}
	os.Exit(m.Run())
}

// probeMain runs each probe "op:arg" and prints "op:arg=result".
func probeMain(probes []string) {
	for _, p := range probes {
		op, arg, _ := strings.Cut(p, ":")
		fmt.Printf("%s=%s\n", p, result(probe(op, arg)))
	}
	if code := os.Getenv("CONFINE_TEST_EXIT"); code != "" {
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "error " + strings.ReplaceAll(err.Error(), "\n", " ")
}

func probe(op, arg string) error {
	switch op {
	case "read":
		_, err := os.ReadFile(arg)
		return err
	case "write":
		return os.WriteFile(arg, []byte("x"), 0o600)
	case "connect":
		c, err := net.Dial("unix", arg)
		if err == nil {
			c.Close()
		}
		return err
	case "rename":
		from, to, _ := strings.Cut(arg, ">")
		return os.Rename(from, to)
	case "stat":
		_, err := os.Stat(arg)
		return err
	case "ppid":
		if got := strconv.Itoa(os.Getppid()); got != arg {
			return fmt.Errorf("ppid %s", got)
		}
		return nil
	case "uid":
		if got := strconv.Itoa(os.Getuid()); got != arg {
			return fmt.Errorf("uid %s", got)
		}
		return nil
	case "tiocsti":
		c := byte('x')
		return ioctlDevNull(unix.SYS_IOCTL, unix.TIOCSTI, unsafe.Pointer(&c))
	case "tiocsti-x32":
		// By the x32 numbers: the native architecture, the number with
		// the x32 bit.
		c := byte('x')
		return ioctlDevNull(unix.SYS_IOCTL|x32SyscallBit, unix.TIOCSTI, unsafe.Pointer(&c))
	case "ioctl386":
		// The i386 program newScenario built, in the run's directory.
		err := exec.Command("./ioctl386", arg).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() < 100 {
			return syscall.Errno(exit.ExitCode())
		}
		return err
	case "tiocspgrp":
		pgrp := int32(unix.Getpgrp())
		return ioctlDevNull(unix.SYS_IOCTL, unix.TIOCSPGRP, unsafe.Pointer(&pgrp))
	case "umount":
		return unix.Unmount(arg, unix.MNT_DETACH)
	case "mount":
		return unix.Mount("tmpfs", arg, "tmpfs", 0, "")
	case "kill":
		n, _ := strconv.Atoi(arg)
		return unix.Kill(n, unix.SIGKILL)
	case "ptrace":
		n, _ := strconv.Atoi(arg)
		return unix.PtraceAttach(n)
	case "ls":
		ents, err := os.ReadDir(arg)
		if err != nil {
			return err
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return fmt.Errorf("[%s]", strings.Join(names, " "))
	case "shmread":
		id, _ := strconv.Atoi(arg)
		mem, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
		if err != nil {
			return err
		}
		defer unix.SysvShmDetach(mem)
		return fmt.Errorf("read %q", strings.TrimRight(string(mem[:16]), "\x00"))
	case "keyread":
		id, _ := strconv.Atoi(arg)
		buf := make([]byte, 64)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			return err
		}
		return fmt.Errorf("read %q", buf[:min(n, len(buf))])
	case "keylink":
		// Links every keyring /proc/keys shows into the run's own session
		// keyring, which makes their keys the run's (possessed), then
		// reads key arg.
		b, err := os.ReadFile("/proc/keys")
		if err != nil {
			return err
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 7 && f[7] == "keyring" {
				if id, err := strconv.ParseInt(f[0], 16, 32); err == nil {
					unix.KeyctlInt(unix.KEYCTL_LINK, int(id), unix.KEY_SPEC_SESSION_KEYRING, 0, 0)
				}
			}
		}
		return probe("keyread", arg)
	case "caps":
		b, _ := os.ReadFile("/proc/self/status")
		for l := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(l, "CapEff:") || strings.HasPrefix(l, "CapPrm:") || strings.HasPrefix(l, "CapBnd:") {
				if !strings.HasSuffix(l, "0000000000000000") {
					return errors.New(l)
				}
			}
		}
		return nil
	case "exec":
		out, err := exec.Command("/bin/sh", "-c", arg).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	case "sleep":
		time.Sleep(time.Minute)
	case "foreground":
		// The foreground process group of its terminal, not a session
		// leader (the helper leads the session).
		pg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
		switch {
		case err != nil:
			return err
		case pg != unix.Getpgrp():
			return fmt.Errorf("foreground group %d, own %d", pg, unix.Getpgrp())
		}
		if sid, _ := unix.Getsid(0); sid == os.Getpid() {
			return errors.New("a session leader")
		}
		return nil
	}
	return fmt.Errorf("unknown probe %q", op)
}

// ioctlDevNull makes ioctl request req, by system call number nr, on
// /dev/null: a filter that refuses req says EPERM, the kernel ENOTTY.
func ioctlDevNull(nr, req uintptr, arg unsafe.Pointer) error {
	f, err := os.Open("/dev/null")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, _, e := unix.Syscall(nr, f.Fd(), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// scenario is a world for a confined probe.
type scenario struct {
	Spec       Spec
	Outside    string // a file under /tmp the run must not see
	Abstract   string // an abstract socket outside the run
	OutsidePID int
	// No386 says that this kernel runs no i386 program at all (built
	// without its i386 entry, or with it turned off, as some
	// virtualised kernels do): the run's programs cannot reach it either.
	No386 bool
}

// newScenario builds directories owned by uid.
func newScenario(t *testing.T, uid int) *scenario {
	t.Helper()
	root, err := os.MkdirTemp("", "confine-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	mk := func(p, content string) string {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o644)
		} else {
			os.MkdirAll(p, 0o755)
		}
		return p
	}
	work := mk("work", "")
	mk("work/state/secret", "vault")
	mk("work/config/postern/config.toml", "approval = \"session\"\n")
	mk("home/.bashrc", "# rc\n")
	mk("home/.gitconfig", "[user]\n")
	mk("cache", "")
	mk("outside", "not for the run")
	no386 := false
	if runtime.GOARCH == "amd64" {
		no386 = !build386(t, filepath.Join(work, "ioctl386"))
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { os.Lchown(p, uid, uid); return nil })
	listen := func(sock string) {
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		os.Chown(sock, uid, uid)
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	sock := filepath.Join(work, "state", "agent.sock")
	listen(sock)
	// A socket hidden on its own, in a tree the run sees (an upstream
	// agent's socket in the home directory).
	upstream := filepath.Join(root, "home", "upstream.sock")
	listen(upstream)
	abstract := fmt.Sprintf("@confine-test-%d", os.Getpid())
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	self, _ := os.Executable()
	return &scenario{
		Spec: Spec{
			Path: self, Dir: work,
			Env:       []string{"CONFINE_TEST_MODE=probe", "HOME=" + filepath.Join(root, "home")},
			ReadWrite: []string{filepath.Join(root, "cache"), filepath.Join(root, "home", ".gitconfig")},
			ReadOnly:  []string{filepath.Join(work, "config", "postern"), filepath.Join(root, "home"), filepath.Dir(self)},
			Hide:      []string{filepath.Join(work, "state"), upstream},
			Sockets:   []string{sock},
		},
		Outside:    filepath.Join(root, "outside"),
		Abstract:   abstract,
		OutsidePID: os.Getpid(),
		No386:      no386,
	}
}

// build386 builds testdata/ioctl386 for GOARCH=386 at path: a program
// that an amd64 kernel runs through its i386 compat entry, where the
// seccomp filter checks other system call numbers. It reports whether
// this kernel runs it, outside any run: one without its i386 entry
// refuses to execute it (ENOEXEC), to every process.
func build386(t *testing.T, path string) bool {
	t.Helper()
	need(t, "go")
	cmd := exec.Command("go", "build", "-o", path, "./testdata/ioctl386")
	cmd.Env = append(os.Environ(), "GOARCH=386", "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the i386 probe: %v\n%s", err, out)
	}
	err := exec.Command(path).Run() // no argument: a usage error, 100
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 100:
		return true
	case errors.Is(err, syscall.ENOEXEC):
		t.Logf("this kernel runs no i386 program (%v): the run's i386 probes must be refused as any process's are", err)
		return false
	}
	t.Fatalf("the i386 probe, outside the run: %v, want exit status 100", err)
	return false
}

// probes lists each probe with the result it must get.
func (s *scenario) probes(uid int) [][2]string {
	work := s.Spec.Dir
	root := filepath.Dir(work)
	var compat [][2]string
	if runtime.GOARCH == "amd64" {
		i386 := "EPERM"
		if s.No386 {
			i386 = "ENOEXEC"
		}
		compat = [][2]string{
			{"tiocsti-x32:", "EPERM"},
			{"ioctl386:tiocsti", i386},
			{"ioctl386:tiocspgrp", i386},
		}
	}
	return append(compat, [][2]string{
		{"write:" + work + "/new", "ok"},
		{"read:" + work + "/state/secret", "ENOENT"},
		{"connect:" + work + "/state/agent.sock", "ok"},
		{"read:" + work + "/config/postern/config.toml", "ok"},
		{"write:" + work + "/config/postern/config.toml", "EROFS"},
		{"rename:" + work + "/config>" + work + "/config.old", "EBUSY"},
		{"rename:" + work + "/state>" + work + "/state.old", "EBUSY"},
		{"read:" + root + "/home/.bashrc", "ok"},
		{"write:" + root + "/home/.gitconfig", "ok"},
		{"connect:" + root + "/home/upstream.sock", "ECONNREFUSED"},
		{"write:" + root + "/home/.bashrc", "EROFS"},
		{"write:" + root + "/cache/x", "ok"},
		{"write:/etc/postern-confine-test", "EROFS"},
		{"read:" + s.Outside, "ENOENT"},
		{"stat:/proc/" + strconv.Itoa(s.OutsidePID), "ENOENT"},
		{"ppid:1", "ok"},
		{"uid:" + strconv.Itoa(uid), "ok"},
		{"caps:", "ok"},
		{"connect:" + s.Abstract, "EPERM"},
		{"tiocsti:", "EPERM"},
		{"tiocspgrp:", "EPERM"},
		{"umount:" + work + "/state", "EPERM"},
		{"mount:" + work, "EPERM"},
		{"kill:1", "EPERM"},
		{"ptrace:1", "EPERM"},
		{"ls:/dev/pts", "error [ptmx]"},
		{"exec:unshare -Urm umount -l " + work + "/state", "error exit status 1: umount: " + work + "/state: must be superuser to unmount.\n"},
	}...)
}

// start runs the scenario's probes confined, in this process, and
// returns their output and exit status.
func (s *scenario) start(t *testing.T, args []string, env ...string) (*Run, *os.File) {
	t.Helper()
	spec := s.Spec
	spec.Args = append([]string{spec.Path}, args...)
	spec.Env = append(append([]string(nil), spec.Env...), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(&spec, nil, pw, pw, nil)
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	return r, pr
}

func checkProbes(t *testing.T, out string, want [][2]string) {
	t.Helper()
	got := map[string]string{}
	for l := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	for _, w := range want {
		r, ok := got[w[0]]
		if !ok {
			t.Errorf("%s: no result\n%s", w[0], out)
			continue
		}
		if !strings.HasPrefix(w[1], "error ") && r != w[1] || strings.HasPrefix(w[1], "error ") && !strings.HasPrefix(r, "error") {
			t.Errorf("%s = %s, want %s", w[0], r, w[1])
		}
	}
}

func probeArgs(p [][2]string) []string {
	var out []string
	for _, x := range p {
		out = append(out, x[0])
	}
	return out
}

// The person's System V shared memory (an X11 client's images) and the
// keys of the person's session keyring are out of a run's reach: it has
// an IPC namespace and a session keyring of its own.
func TestConfinedRunReachesNoIPCOrKeysOfThePerson(t *testing.T) {
	need(t, "unshare")
	s := newScenario(t, os.Getuid())
	shm, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmCtl(shm, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(shm, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.SysvShmDetach(mem)
	copy(mem, "person's image")
	// A session keyring of this thread's, which the run started from it
	// would inherit; the thread ends with the test (never unlocked).
	runtime.LockOSThread()
	if _, err := unix.KeyctlJoinSessionKeyring("postern-confine-test"); err != nil {
		t.Fatal(err)
	}
	key, err := unix.AddKey("user", "postern-confine-test", []byte("person's key"), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	probes := []string{"shmread:" + strconv.Itoa(shm), "keyread:" + strconv.Itoa(key)}
	r, out := s.start(t, probes)
	b, _ := io.ReadAll(out)
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		op, arg, _ := strings.Cut(p, ":")
		if l := p + "=" + result(probe(op, arg)); !strings.Contains(l, "read ") {
			t.Fatalf("outside the run, %s: the test reaches nothing to hide", l)
		}
		if !strings.Contains(string(b), p+"=E") {
			t.Errorf("inside the run, %s got:\n%s", p, b)
		}
	}
}

// The person's user keyring, which the kernel opens to every process of
// the person's uid (ecryptfs keeps its passphrases there), is out of a
// run's reach too: linked into the run's own session keyring, its keys
// would be the run's.
func TestConfinedRunReachesNoKeyringOfThePerson(t *testing.T) {
	need(t, "unshare")
	s := newScenario(t, os.Getuid())
	key, err := unix.AddKey("user", "postern-confine-test", []byte("person's key"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_UNLINK, key, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	p := "keylink:" + strconv.Itoa(key)
	r, out := s.start(t, []string{p})
	b, _ := io.ReadAll(out)
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), p+"=E") {
		t.Errorf("inside the run, %s got:\n%s", p, b)
	}
}

func TestConfinedRun(t *testing.T) {
	need(t, "unshare")
	s := newScenario(t, os.Getuid())
	want := s.probes(os.Getuid())
	r, out := s.start(t, probeArgs(want), "CONFINE_TEST_EXIT=3")
	b, _ := io.ReadAll(out)
	code, err := r.Wait()
	if err != nil || code != 3 {
		t.Fatalf("exit %d, %v; want 3\n%s", code, err, b)
	}
	if !r.Level.Namespaces || r.Level.Landlock < 6 {
		t.Fatalf("level %+v: this kernel has Landlock ABI 6 or later", r.Level)
	}
	// The filter is there, and said to be, where the machine has one.
	if r.Level.NoSeccomp != (nativeArch == 0) {
		t.Fatalf("level %+v on an architecture whose filter is %#x", r.Level, nativeArch)
	}
	if r.Level.String() != fmt.Sprintf("confined: namespaces, Landlock ABI %d", r.Level.Landlock) {
		t.Fatalf("level text %q", r.Level)
	}
	checkProbes(t, string(b), want)
	// The helper reported the program's pid as this process sees it.
	if r.PID == r.Helper.Pid || r.PID <= 0 {
		t.Fatalf("pid %d, helper %d", r.PID, r.Helper.Pid)
	}
}

// As an unprivileged user, as users run it: the test binary starts the
// run as nobody and relays what the probes got.
func TestConfinedRunUnprivileged(t *testing.T) {
	need(t, "setpriv", "unshare")
	if os.Geteuid() != 0 {
		t.Fatal("this test runs as root (as CI runs the tests), to become another user")
	}
	const uid = 65534
	s := newScenario(t, uid)
	want := s.probes(uid)
	spec := s.Spec
	// A copy of the test binary the other user can execute.
	bin := filepath.Join(filepath.Dir(spec.Dir), "bin", "confine.test")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.Chmod(filepath.Dir(bin), 0o755) // whatever the umask
	if out, err := exec.Command("cp", spec.Path, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Chmod(bin, 0o755)
	spec.Path = bin
	spec.ReadOnly = append(spec.ReadOnly, filepath.Dir(bin))
	spec.Args = append([]string{spec.Path}, probeArgs(want)...)
	b, _ := json.Marshal(spec)
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups", "--", spec.Path)
	cmd.Env = []string{"CONFINE_TEST_MODE=start", "CONFINE_TEST_SPEC=" + string(b), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkProbes(t, string(out), want)
	if !strings.Contains(string(out), "level=confined: namespaces, Landlock ABI") {
		t.Fatalf("level: %s", out)
	}
}

// startMain starts the spec of $CONFINE_TEST_SPEC confined and prints
// the probes' output and the level.
func startMain() {
	var s Spec
	json.Unmarshal([]byte(os.Getenv("CONFINE_TEST_SPEC")), &s)
	r, err := Start(&s, nil, os.Stdout, os.Stderr, nil)
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	code, err := r.Wait()
	fmt.Printf("level=%s\nexit=%d %v\n", r.Level, code, err)
}

// With a terminal of the run's own, the program is its foreground
// process group, may set it (tcsetpgrp: a shell's job control), may not
// push input into it, and stopping on it (Ctrl-Z) stops the run, which
// Stops reports and Resume continues.
func TestOwnTerminal(t *testing.T) {
	master, tty, err := ptyrelay.OpenPair()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&out, master); close(copied) }()
	s := newScenario(t, os.Getuid())
	want := [][2]string{{"foreground:", "ok"}, {"tiocspgrp:", "ENOTTY"}, {"tiocsti:", "EPERM"}}
	s.Spec.Args = append([]string{s.Spec.Path}, append(probeArgs(want), "sleep:")...)
	r, err := Start(&s.Spec, tty, tty, tty, tty)
	tty.Close()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	master.Write([]byte{0x1a}) // Ctrl-Z
	select {
	case <-r.Stops():
	case <-time.After(10 * time.Second):
		t.Fatal("the program stopped on its terminal, and the run was not reported stopped")
	}
	if !stopped(r.PID) {
		t.Fatal("reported stopped, and the program is not")
	}
	r.Resume()
	deadline := time.Now().Add(5 * time.Second)
	for stopped(r.PID) {
		if time.Now().After(deadline) {
			t.Fatal("resumed, and the program is still stopped")
		}
		time.Sleep(time.Millisecond)
	}
	r.Signal(syscall.SIGTERM)
	if code, err := r.Wait(); err != nil || code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, %v", code, err)
	}
	<-copied
	checkProbes(t, strings.ReplaceAll(out.String(), "\r", ""), want)
}

func TestSignalReachesProgram(t *testing.T) {
	s := newScenario(t, os.Getuid())
	r, out := s.start(t, []string{"sleep:"})
	defer out.Close()
	time.Sleep(100 * time.Millisecond)
	if err := r.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := r.Wait()
	if err != nil || code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, %v; want %d", code, err, 128+syscall.SIGTERM)
	}
}

func TestMissingProgram(t *testing.T) {
	s := newScenario(t, os.Getuid())
	s.Spec.Path = "/nonexistent/program"
	_, err := Start(&s.Spec, nil, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Fatalf("err %v", err)
	}
}

// Where user namespaces are disabled, Start refuses and names the
// setting; it never runs the program. The setting is per user namespace,
// so the test disables it in a namespace of its own.
func TestRefusesWithoutUserNamespaces(t *testing.T) {
	need(t, "unshare")
	s := newScenario(t, os.Getuid())
	s.Spec.Args = []string{s.Spec.Path, "write:" + s.Spec.Dir + "/ran"}
	b, _ := json.Marshal(s.Spec)
	cmd := exec.Command("unshare", "--user", "--map-current-user", "--", "/bin/sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && exec "$0"`, s.Spec.Path)
	cmd.Env = []string{"CONFINE_TEST_MODE=start", "CONFINE_TEST_SPEC=" + string(b), "PATH=" + os.Getenv("PATH")}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "start: cannot confine the run") || !strings.Contains(string(out), "user.max_user_namespaces = 0") {
		t.Fatalf("output: %s", out)
	}
	if _, err := os.Stat(s.Spec.Dir + "/ran"); err == nil {
		t.Fatal("the program ran")
	}
}

func TestCause(t *testing.T) {
	defer func(old string) { procSys = old }(procSys)
	procSys = t.TempDir()
	set := func(name, v string) {
		os.MkdirAll(filepath.Dir(filepath.Join(procSys, name)), 0o755)
		os.WriteFile(filepath.Join(procSys, name), []byte(v+"\n"), 0o644)
	}
	const user, root = 1000, 0
	if c := causeFor(user); c != "" {
		t.Fatalf("no settings: %q", c)
	}
	set("user/max_user_namespaces", "0")
	for _, euid := range []int{user, root} {
		if c := causeFor(euid); !strings.Contains(c, "user.max_user_namespaces = 0") {
			t.Fatalf("max_user_namespaces, euid %d: %q", euid, c)
		}
	}
	if err := Available(); err == nil || !strings.Contains(err.Error(), "max_user_namespaces") {
		t.Fatalf("Available: %v", err)
	}
	set("user/max_user_namespaces", "100")
	set("kernel/unprivileged_userns_clone", "0")
	if c := causeFor(user); !strings.Contains(c, "kernel.unprivileged_userns_clone = 0") {
		t.Fatalf("unprivileged_userns_clone: %q", c)
	}
	if c := causeFor(root); c != "" {
		t.Fatalf("root is not held back by unprivileged_userns_clone: %q", c)
	}
	set("kernel/unprivileged_userns_clone", "1")
	set("kernel/apparmor_restrict_unprivileged_userns", "1")
	if c := causeFor(user); !strings.Contains(c, "AppArmor") {
		t.Fatalf("AppArmor: %q", c)
	}
}

func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed; .ci/run installs it", p)
		}
	}
}
