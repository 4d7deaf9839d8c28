package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/agent"
)

// signClientMain is the client program of BenchmarkSignDefault. It signs
// once through each agent named in POSTERN_SIGNCLIENT_DEFAULT and
// POSTERN_SIGNCLIENT_SSH_AGENT (the first key postern lists, which
// ssh-agent holds as well; postern's first may wait on a card) and prints
// "ready"; then, for each line "MODE AGENT N" it reads, it signs N times
// (MODE seq: on one connection per agent, kept; conn: on a new connection
// each) and prints the nanoseconds each took on one line. Anything that
// fails is printed instead, and ends it.
func signClientMain() {
	fail := func(what string, err error) {
		fmt.Printf("%s: %v\n", what, err)
		os.Exit(1)
	}
	socks := map[string]string{"default": os.Getenv("POSTERN_SIGNCLIENT_DEFAULT"), "ssh-agent": os.Getenv("POSTERN_SIGNCLIENT_SSH_AGENT")}
	dial := func(name string) (agent.ExtendedAgent, net.Conn) {
		c, err := net.Dial("unix", socks[name])
		if err != nil {
			fail(name, err)
		}
		return agent.NewClient(c), c
	}
	kept := map[string]agent.ExtendedAgent{}
	for name := range socks {
		kept[name], _ = dial(name)
	}
	keys, err := kept["default"].List()
	if err != nil || len(keys) == 0 {
		fail("listing postern's keys", fmt.Errorf("%v, %d keys", err, len(keys)))
	}
	data := []byte("a session identifier and a userauth request, roughly this long, to be signed")
	for _, name := range []string{"default", "ssh-agent"} {
		if _, err := kept[name].Sign(keys[0], data); err != nil {
			fail(name+": the first signature", err)
		}
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var mode, name string
		var n int
		if _, err := fmt.Sscanf(sc.Text(), "%s %s %d", &mode, &name, &n); err != nil || kept[name] == nil {
			fail("the request "+strconv.Quote(sc.Text()), err)
		}
		var line strings.Builder
		for i := 0; i < n; i++ {
			cl, c := kept[name], net.Conn(nil)
			start := time.Now()
			if mode == "conn" {
				cl, c = dial(name)
			}
			_, err = cl.Sign(keys[0], data)
			if c != nil {
				c.Close()
			}
			fmt.Fprintf(&line, " %d", time.Since(start).Nanoseconds())
			if err != nil {
				fail(name+" "+mode, err)
			}
		}
		fmt.Println(strings.TrimSpace(line.String()))
	}
}
