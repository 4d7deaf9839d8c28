package hugepages

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/postern/postern/internal/startagain"
)

// childVar makes the test binary the program Off is tried in, and
// turnOffVar the program TurnOff is.
const (
	childVar   = "HUGEPAGES_TEST_CHILD"
	turnOffVar = "HUGEPAGES_TEST_TURN_OFF"
)

func TestMain(m *testing.M) {
	if os.Getenv(turnOffVar) != "" {
		fmt.Printf("start pid=%d disabled=%v\n", os.Getpid(), disabled())
		startAgain := TurnOff()
		fmt.Printf("turned off pid=%d disabled=%v start-again=%v childenv=%d\n", os.Getpid(), disabled(), startAgain, len(ChildEnv()))
		os.Exit(0)
	}
	if os.Getenv(childVar) != "" {
		// What Off does to a program: counted by the lines its starts
		// print, one each.
		fmt.Printf("start pid=%d disabled=%v\n", os.Getpid(), disabled())
		Off()
		_, again := os.LookupEnv(againVar)
		names := map[string]bool{}
		for _, n := range startagain.Names() {
			names[n] = true
		}
		restore := Allow()
		allowed := disabled()
		restore()
		fmt.Printf("off pid=%d disabled=%v marker=%v names=%v allow-disabled=%v\n", os.Getpid(), disabled(), again, slices.Sorted(maps.Keys(names)), allowed)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// reset puts the process back as it was before Off, for the next test.
func reset(t *testing.T) {
	t.Cleanup(func() {
		setDisabled(false)
		state.off, state.allowed = false, 0
	})
}

func TestAllowChangesNothingWithoutOff(t *testing.T) {
	reset(t)
	if setDisabled(false) != nil || disabled() {
		t.Fatal("cannot turn huge pages on for the test process")
	}
	restore := Allow()
	if disabled() {
		t.Fatal("Allow turned huge pages off")
	}
	restore()
	if disabled() {
		t.Fatal("Allow's restore turned huge pages off in a process that never had them off")
	}
}

func TestAllowTurnsThemOnUntilTheLastRestore(t *testing.T) {
	reset(t)
	if !markOff() {
		t.Fatal("cannot turn huge pages off (prctl PR_SET_THP_DISABLE)")
	}
	if !disabled() {
		t.Fatal("markOff left huge pages on")
	}
	first := Allow()
	second := Allow()
	if disabled() {
		t.Fatal("huge pages still off inside Allow")
	}
	first()
	first() // a second call is no second restore
	if disabled() {
		t.Fatal("huge pages off again while an Allow is still open")
	}
	second()
	if !disabled() {
		t.Fatal("huge pages left on after the last restore")
	}
}

// TestOffStartsTheProgramAgainUnderTheSetting runs Off in a child
// process: where the kernel gives huge pages to all memory, the program
// starts a second time, in the same process, with huge pages off from
// its first instruction, and no marker left for what it starts; elsewhere
// it starts once and turns them off. Either way every thread keeps the
// program's name (ps shows the first's), where an exec of /proc/self/exe
// names it "exe", and Allow turns them on. A program started with huge
// pages off and the marker ChildEnv gives (the daemon a detaching agent
// starts) is not started again, takes the name the marker holds, and
// Allow turns them on too. One started with huge pages off and no marker
// got the setting from the person: it keeps them off, and Allow leaves
// them off.
func TestOffStartsTheProgramAgainUnderTheSetting(t *testing.T) {
	// The kernel's name for a program: its file's, cut to 15 bytes.
	name := filepath.Base(os.Args[0])
	name = name[:min(len(name), 15)]
	for _, c := range []struct {
		inherited, marked bool
	}{{false, false}, {true, true}, {true, false}} {
		t.Run(fmt.Sprintf("inherited=%v,marked=%v", c.inherited, c.marked), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childVar+"=1")
			if c.marked {
				reset(t)
				markOff()
				cmd.Env = append(cmd.Env, ChildEnv()...)
				if !slices.ContainsFunc(cmd.Env, func(v string) bool { return strings.HasPrefix(v, againVar+"=") }) {
					t.Fatalf("ChildEnv after Off gave no marker: %q", ChildEnv())
				}
			}
			// With inherited, the parent's setting, handed on at the
			// fork: the person's, or the detaching agent's.
			reset(t)
			if err := setDisabled(c.inherited); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			pid := cmd.Process.Pid
			want := []string{fmt.Sprintf("start pid=%d disabled=%v", pid, c.inherited)}
			if allMemory() && !c.inherited {
				want = append(want, fmt.Sprintf("start pid=%d disabled=true", pid))
			}
			personal := c.inherited && !c.marked
			want = append(want, fmt.Sprintf("off pid=%d disabled=true marker=false names=[%s] allow-disabled=%v", pid, name, personal))
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("the child printed\n%s\nwant\n%s\n(%s: %s)", out, strings.Join(want, "\n"), modeFile, mode())
			}
		})
	}
}

// TurnOff turns huge pages off as Off does but never starts the program
// again: it says whether the program must, where the kernel gives them to
// all memory, with ChildEnv's marker and name to hand on. Where the
// person turned them off, the program need not start again, and nothing
// is handed on.
func TestTurnOffLeavesTheStartAgainToTheCaller(t *testing.T) {
	for _, inherited := range []bool{false, true} {
		t.Run(fmt.Sprintf("inherited=%v", inherited), func(t *testing.T) {
			reset(t)
			if err := setDisabled(inherited); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), turnOffVar+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			pid := cmd.Process.Pid
			childEnv := 2
			if inherited {
				childEnv = 0
			}
			want := fmt.Sprintf("start pid=%d disabled=%v\nturned off pid=%d disabled=true start-again=%v childenv=%d", pid, inherited, pid, allMemory() && !inherited, childEnv)
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("the child printed\n%s\nwant\n%s\n(%s: %s)", got, want, modeFile, mode())
			}
		})
	}
}

// ChildEnv gives no marker where Off did not turn huge pages off.
func TestChildEnvWithoutOff(t *testing.T) {
	reset(t)
	if env := ChildEnv(); env != nil {
		t.Fatalf("ChildEnv without Off: %q", env)
	}
}

func mode() string {
	b, _ := os.ReadFile(modeFile)
	return strings.TrimSpace(string(b))
}
