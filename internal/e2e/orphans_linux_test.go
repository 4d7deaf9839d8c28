package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postern/postern/internal/procid/proctest"
)

// A test binary killed from outside (go test's own timeout, a person's
// kill) takes the processes its tests started with it: none is left
// running (a gateway, a console, a run), where a console and its
// gateway were found running after such a kill.
func TestProcessesDieWithTheTestBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(self)
	holder.Env = append(os.Environ(), "POSTERN_E2E_HELPER=hold")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("the holder said %q (%v)", line, err)
	}
	holder.Process.Kill()
	holder.Wait()
	for deadline := time.Now().Add(30 * time.Second); proctest.Running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d, started by a test binary killed since, still runs", pid)
		}
	}
}
