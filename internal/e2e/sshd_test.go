package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// An OpenSSH is one installation of OpenSSH's programs: the system's, or
// OpenSSH 10 unpacked beside it.
type OpenSSH struct {
	SSH     string // the client
	SSHD    string
	Libexec string // sftp-server; for OpenSSH 10, sshd-session and sshd-auth
	// separate: sshd is told where its sshd-session and sshd-auth are
	// (they are not where it was built to find them).
	separate bool
}

// systemOpenSSH is the OpenSSH on PATH (and sshd in /usr/sbin).
func systemOpenSSH(t testing.TB) OpenSSH {
	t.Helper()
	need(t, "ssh")
	return OpenSSH{SSH: "ssh", SSHD: sshdPath(t), Libexec: "/usr/lib/openssh"}
}

// openSSH10Dir is where .ci/run unpacks OpenSSH 10 (from Debian's
// bookworm-backports) beside the system's OpenSSH, unless
// $POSTERN_OPENSSH10 names another directory.
const openSSH10Dir = "/opt/openssh-10"

var openSSH10Version struct {
	once sync.Once
	out  string
	err  error
}

// openSSH10 is OpenSSH 10, unpacked beside the system's: the client and
// server that negotiate mlkem768x25519-sha256 (OpenSSH 9.2 cannot). A
// test that needs it fails when it is missing.
func openSSH10(t testing.TB) OpenSSH {
	t.Helper()
	dir := os.Getenv("POSTERN_OPENSSH10")
	if dir == "" {
		dir = openSSH10Dir
	}
	o := OpenSSH{
		SSH:      filepath.Join(dir, "usr/bin/ssh"),
		SSHD:     filepath.Join(dir, "usr/sbin/sshd"),
		Libexec:  filepath.Join(dir, "usr/lib/openssh"),
		separate: true,
	}
	v := &openSSH10Version
	v.once.Do(func() {
		out, err := exec.Command(o.SSH, "-V").CombinedOutput()
		v.out, v.err = string(out), err
	})
	if v.err != nil || !strings.HasPrefix(v.out, "OpenSSH_10") {
		t.Fatalf("OpenSSH 10 is not unpacked in %s (%v %s); .ci/run unpacks it, or set $POSTERN_OPENSSH10", dir, v.err, v.out)
	}
	return o
}

// SSHD is a real OpenSSH sshd on loopback, with its own configuration,
// host key and authorized_keys in a temporary directory.
type SSHD struct {
	Port       int
	OpenSSH    OpenSSH // the installation sshd is from, whose ssh speaks its newest key exchange
	Dir        string  // Dir/home is the logins' HOME
	HostKey    string  // public host key line
	KnownHosts string  // a known_hosts file naming the server [127.0.0.1]:PORT and the given aliases
	User       string
	cmd        *exec.Cmd
	done       chan struct{}
	log        string
}

// startSSHD starts sshd accepting the public keys in authorized (one per
// line). aliases are extra known_hosts names for its host key, used with
// HostKeyAlias so that tests can give the verified host a name.
func startSSHD(t testing.TB, authorized string, aliases ...string) *SSHD {
	t.Helper()
	return startSSHDConfig(t, authorized, "", aliases...)
}

// startSSHDConfig is startSSHD with extra lines for sshd_config.
func startSSHDConfig(t testing.TB, authorized, extra string, aliases ...string) *SSHD {
	t.Helper()
	return startSSHDOn(t, systemOpenSSH(t), authorized, extra, aliases...)
}

// startSSHDOn is startSSHDConfig with the sshd of o.
func startSSHDOn(t testing.TB, o OpenSSH, authorized, extra string, aliases ...string) *SSHD {
	t.Helper()
	return startSSHDVia(t, nil, o, authorized, extra, aliases...)
}

// startSSHDVia is startSSHDOn with sshd started through the command line
// wrap (none when nil), which must exec it.
func startSSHDVia(t testing.TB, wrap []string, o OpenSSH, authorized, extra string, aliases ...string) *SSHD {
	t.Helper()
	need(t, "ssh-keygen")
	if os.Geteuid() == 0 {
		// sshd running as root wants its privilege separation directory.
		os.MkdirAll("/run/sshd", 0o755)
	}
	dir, err := os.MkdirTemp(tempBase(), "pe2e-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	hostKey := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	pub, _ := os.ReadFile(hostKey + ".pub")
	fields := strings.Fields(string(pub))
	hostLine := fields[0] + " " + fields[1]
	os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(authorized), 0o600)
	// The login's HOME is a directory of the test (SetEnv wins over the
	// password database), so that nothing a command run through the
	// bastion leaves in it, remote markers included, lands in the real
	// home directory. sshd reads ~/.ssh/rc from the password database's
	// home, whatever HOME says: PermitUserRC keeps it from running the
	// runner's at every login.
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	u, _ := user.Current()
	sftp := filepath.Join(o.Libexec, "sftp-server")
	if o.separate {
		extra = fmt.Sprintf("SshdSessionPath %s\nSshdAuthPath %s\n%s", filepath.Join(o.Libexec, "sshd-session"), filepath.Join(o.Libexec, "sshd-auth"), extra)
	}
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PermitUserRC no
LogLevel VERBOSE
MaxStartups 200
AcceptEnv LANG POSTERN_TEST_*
SetEnv HOME=%s/home
Subsystem sftp %s
%s
`, port, hostKey, dir, dir, dir, sftp, extra)
		cfg := filepath.Join(dir, "sshd_config")
		os.WriteFile(cfg, []byte(conf), 0o600)
		s := &SSHD{Port: port, OpenSSH: o, Dir: dir, HostKey: hostLine, User: u.Username, done: make(chan struct{})}
		line := append(append([]string(nil), wrap...), o.SSHD, "-D", "-e", "-f", cfg)
		s.cmd = exec.Command(line[0], line[1:]...)
		logf, _ := os.Create(filepath.Join(dir, "sshd.log"))
		s.cmd.Stdout, s.cmd.Stderr = logf, logf
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { s.cmd.Wait(); logf.Close(); close(s.done) }()
		if waitListening(dir, port, s.done) {
			t.Cleanup(s.Stop)
			// Runs first: what sshd said of a failed test's connections.
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the test's sshd logged:\n%s", tail(s.Log(), 8<<10))
				}
			})
			names := append([]string{fmt.Sprintf("[127.0.0.1]:%d", port)}, aliases...)
			s.KnownHosts = filepath.Join(dir, "known_hosts")
			os.WriteFile(s.KnownHosts, []byte(strings.Join(names, ",")+" "+hostLine+"\n"), 0o600)
			return s
		}
		s.Stop()
	}
	b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
	t.Fatalf("sshd did not start:\n%s", b)
	return nil
}

// sshdPath finds sshd, which lives in /usr/sbin, outside many users' PATH.
func sshdPath(t testing.TB) string {
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
		return "/usr/sbin/sshd"
	}
	need(t, "sshd")
	return ""
}

// Log returns what sshd logged.
func (s *SSHD) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// Stop kills sshd and what its logins left running.
func (s *SSHD) Stop() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Kill()
		<-s.done
	}
	killLeftBy(filepath.Join(s.Dir, "home"))
}

// SSHArgs returns ssh options that connect to this server with nothing
// from the user's own configuration, verifying its host key strictly.
func (s *SSHD) SSHArgs(extra ...string) []string {
	args := []string{
		"-F", "/dev/null",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + s.KnownHosts,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "IdentityFile=/dev/null",
		"-o", "ConnectTimeout=20",
		"-p", fmt.Sprint(s.Port),
	}
	args = append(args, extra...)
	return args
}

// Target is user@127.0.0.1.
func (s *SSHD) Target() string { return s.User + "@127.0.0.1" }

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitListening waits until the sshd whose log is in dir says it listens
// on port. Connecting to the port is not proof: between freePort and
// sshd's bind, another test (of another package, running meanwhile) can
// take the port, and ssh would then meet a stranger's host key.
func waitListening(dir string, port int, done chan struct{}) bool {
	want := fmt.Sprintf("Server listening on 127.0.0.1 port %d.", port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "sshd.log")); strings.Contains(string(b), want) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
