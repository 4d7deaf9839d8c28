package e2e

import (
	"fmt"
	"os"
)

// holdMain starts a process as the tests start theirs, prints its pid,
// and waits to be killed.
func holdMain() {
	cmd := testCommand("sleep", "1000")
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}
