package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
)

// Clients of the bastion in their SSH handshake, each sending the first
// packet as large as SSH allows and holding back its last bytes: the SSH
// library reads a packet into a buffer of the size it announces, and a
// handshake may take a minute. What they hold together is bounded, and
// ssh through the bastion works once they are gone.
func TestBastionHandshakesHoldBoundedMemory(t *testing.T) {
	const (
		conns = 600
		bound = 64 << 10 // KiB the gateway may grow by
	)
	b := newBastionWorld(t, "")
	pid := b.agent.PID()
	before := rss(t, pid)
	packet := make([]byte, 256<<10-4) // its length, then all but its last bytes
	binary.BigEndian.PutUint32(packet, uint32(len(packet)))
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("unix", b.e.Path("run", "postern", "bastion.sock"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.Write([]byte("postern-connect/1 u 127.0.0.1 22\n"))
		if l, err := bufio.NewReader(c).ReadString('\n'); l != "ok\n" {
			t.Fatalf("the bastion answered %q (%v)", l, err)
		}
		c.Write([]byte("SSH-2.0-OpenSSH_9.9\r\n"))
		go c.Write(packet) // waits while the gateway reads nothing of it
	}
	grewAtMost(t, pid, before, bound, fmt.Sprintf("with %d bastion handshakes holding back a packet's last bytes", conns))
	for _, c := range held {
		c.Close()
	}
	held = nil
	if r := b.ssh("true"); r.Code != 0 {
		t.Fatalf("ssh through the bastion after the handshakes: %s", r)
	}
}
