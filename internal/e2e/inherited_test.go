package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// closeInheritedOnExec marks every descriptor this process inherited
// (any above standard error) close-on-exec, so that the programs the
// tests start, gateways first, hold only what they open themselves,
// wherever "go test" was started: a descriptor the shell, make or a CI
// runner left open (one numbered 251, one a script opened) otherwise
// reaches every gateway, and a test of the gateway's descriptor limit
// (TestOutOfDescriptorsIsNotAChangedProcess, which counts what the
// gateway holds) passes or fails by where it lies in the gateway's
// table. The descriptors the test binary opens are close-on-exec
// already.
func closeInheritedOnExec() {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range es {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// inheritedEnv names, in the copy of the test binary that
// TestInheritedDescriptorsDoNotReachTheGateway starts, the file it
// inherited open as descriptor inheritedFD.
const (
	inheritedEnv = "POSTERN_E2E_INHERITED"
	inheritedFD  = 40
)

// The tests run as "go test" was started, with whatever descriptors it
// inherited: this test runs itself again with one more, numbered 40
// (above the gateway's own, below the limits the descriptor tests set),
// and the gateway it starts there does not hold it.
func TestInheritedDescriptorsDoNotReachTheGateway(t *testing.T) {
	if path := os.Getenv(inheritedEnv); path != "" {
		e := newEnv(t)
		e.Config(`approval = "none"`)
		a := e.StartAgent()
		dir := "/proc/" + strconv.Itoa(a.PID()) + "/fd"
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range es {
			if target, _ := os.Readlink(filepath.Join(dir, fd.Name())); target == path {
				t.Errorf("the gateway holds descriptor %s, %s, which the tests inherited", fd.Name(), target)
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), "inherited")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run", "^TestInheritedDescriptorsDoNotReachTheGateway$", "-test.count", "1")
	cmd.Env = append(os.Environ(), inheritedEnv+"="+path)
	cmd.ExtraFiles = make([]*os.File, inheritedFD-2)
	cmd.ExtraFiles[inheritedFD-3] = f
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("with descriptor %d inherited: %v\n%s", inheritedFD, err, out)
	}
}
