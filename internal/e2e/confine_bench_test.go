package e2e

// Confinement, measured side by side with an unconfined run:
//
//	go test -run '^$' -bench 'RunStart|SignInRun' -benchtime 20x ./internal/e2e/
//
// BenchmarkRunStart times "postern run -- /bin/true" from start to exit;
// BenchmarkSignInRun times signatures made inside the run through its
// socket (approval = "none": the protocol and the per-request identity
// checks, no person).

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/agent"
)

var sandboxModes = []struct{ name, flag string }{{"unconfined", "--no-sandbox"}, {"confined", ""}}

func benchRunArgs(flag string, cmd ...string) []string {
	args := []string{"run"}
	if flag != "" {
		args = append(args, flag)
	}
	return append(append(args, "--"), cmd...)
}

func BenchmarkRunStart(b *testing.B) {
	e := newEnv(b)
	e.Config(`approval = "none"`)
	e.StartAgent()
	for _, m := range sandboxModes {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				if r := e.Run("postern", benchRunArgs(m.flag, "/bin/true")...); r.Code != 0 {
					b.Fatalf("postern run: %s", r)
				}
			}
		})
	}
}

func BenchmarkSignInRun(b *testing.B) {
	need(b, "ssh-add", "ssh-keygen")
	e := newEnv(b)
	e.Config(`approval = "none"`)
	e.StartAgent()
	e.AddKey(e.Keygen("k", "ed25519", 0, ""))
	self, _ := os.Executable()
	for _, m := range sandboxModes {
		b.Run(m.name, func(b *testing.B) {
			cmd := e.Command("postern", benchRunArgs(m.flag, self)...)
			cmd.Env = append(cmd.Env, "POSTERN_E2E_HELPER=signbench", "POSTERN_E2E_N="+strconv.Itoa(b.N))
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				b.Fatalf("helper: %s", out)
			}
			b.ReportMetric(ns, "ns/sign")
		})
	}
}

// signBench runs inside the run: n signatures through $SSH_AUTH_SOCK, on
// one connection; it prints the mean time of one.
func signBench() {
	n, _ := strconv.Atoi(os.Getenv("POSTERN_E2E_N"))
	c, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(1)
	}
	a := agent.NewClient(c)
	keys, err := a.List()
	if err != nil || len(keys) == 0 {
		fmt.Println("list:", err, len(keys))
		os.Exit(1)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := a.Sign(keys[0], []byte("data")); err != nil {
			fmt.Println("sign:", err)
			os.Exit(1)
		}
	}
	fmt.Println(float64(time.Since(start).Nanoseconds()) / float64(max(n, 1)))
}
