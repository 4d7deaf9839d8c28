package startagain

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// childVar makes the test binary start itself again once.
const childVar = "STARTAGAIN_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childVar) != "" {
		Restore()
		if _, again := os.LookupEnv("STARTAGAIN_TEST_AGAIN"); !again {
			fmt.Printf("first pid=%d\n", os.Getpid())
			err := Exec("STARTAGAIN_TEST_AGAIN=1")
			fmt.Printf("exec failed: %v\n", err)
			os.Exit(1)
		}
		_, name := os.LookupEnv(nameVar)
		// One name per thread, each the same.
		fmt.Printf("again pid=%d names=%v name-var=%v\n", os.Getpid(), slices.Compact(slices.Sorted(slices.Values(Names()))), name)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The program started again runs in the same process, with what Exec
// added to its environment, and every thread named as before, where the
// kernel names it "exe"; nothing it starts sees the name's variable.
func TestExecKeepsTheProcessAndItsName(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childVar+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pid := cmd.Process.Pid
	name := Names()[0]
	want := fmt.Sprintf("first pid=%d\nagain pid=%d names=[%s] name-var=false", pid, pid, name)
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("the child printed\n%s\nwant\n%s", got, want)
	}
}
