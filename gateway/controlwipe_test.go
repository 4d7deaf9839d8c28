package gateway

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/vault"
)

// A private key sent to the gateway with "postern vault add" travels in
// the request line, base64-encoded. Once the change is answered, no copy
// of that line is left in the gateway's memory: not in the buffer the
// line was read through, nor in the line, nor in the arguments taken
// from it (the key decoded from them goes with the change). The request
// is built here, sent on a socket of the test's own and cleared; the
// memory of this process (the gateway runs in it) is then searched for
// the encoded key.
func TestRequestLineHoldingAKeyIsCleared(t *testing.T) {
	pass := []byte("wipe pass")
	dir := gatewayHome(t)
	initTestVault(t, pass)
	_, sock, stop := runGateway(t, dir)

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := vault.NewKey(priv, "wiped")
	clear(priv)
	if err != nil {
		t.Fatal(err)
	}
	// The line, with the key as encoding/json encodes a []byte.
	head := `{"op":"vault.change","args":{"passphrase":"` + base64.StdEncoding.EncodeToString(pass) + `","add":[{"Comment":"wiped","Private":"`
	tail := `","Added":"2026-01-01T00:00:00Z","Certs":null}]}}` + "\n"
	line := make([]byte, len(head)+base64.StdEncoding.EncodedLen(len(k.Private))+len(tail))
	copy(line, head)
	encoded := line[len(head) : len(line)-len(tail)]
	base64.StdEncoding.Encode(encoded, k.Private)
	copy(line[len(line)-len(tail):], tail)
	k.Wipe()
	// What is searched for: 64 bytes from the middle of the encoded key,
	// kept inverted, so that this test holds no copy of them.
	mid := len(encoded)/2 - 32
	inverted := make([]byte, 64)
	for i := range inverted {
		inverted[i] = ^encoded[mid+i]
	}

	c, err := net.Dial("unix", api.ControlSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Write(line)
	clear(line)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || strings.Contains(answer, `"error"`) {
		t.Fatalf("vault.change: %q, %v", answer, err)
	}
	if at, found := searchMemory(t, inverted); found {
		t.Fatalf("the key was added, and the encoded key of the request line is still in memory, at %#x", at)
	}
	stop()
}

// searchMemory searches the writable memory of this process for the
// bytes whose complement is inverted, and says where it found them.
func searchMemory(t *testing.T, inverted []byte) (uintptr, bool) {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	first := ^inverted[0]
	buf := make([]byte, 1<<20+len(inverted))
	defer clear(buf)
	for l := range strings.Lines(string(maps)) {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") {
			continue
		}
		var start, end uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &start, &end); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		for at := start; at < end; at += 1 << 20 {
			n, _ := mem.ReadAt(buf[:min(uint64(len(buf)), end-at)], int64(at))
			for b := buf[:n]; len(b) >= len(inverted); {
				i := bytes.IndexByte(b, first)
				if i < 0 || len(b)-i < len(inverted) {
					break
				}
				if matches(b[i:], inverted) {
					return uintptr(at) + uintptr(n-len(b)+i), true
				}
				b = b[i+1:]
			}
		}
	}
	return 0, false
}

// matches reports whether b starts with the complement of inverted.
func matches(b, inverted []byte) bool {
	for j, v := range inverted {
		if b[j] != ^v {
			return false
		}
	}
	return true
}
