package procid

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestUIDOfALiveProcess(t *testing.T) {
	uid, err := Host.UID(os.Getpid())
	if err != nil || uid != uint32(os.Getuid()) {
		t.Fatalf("uid %d, %v; want %d", uid, err, os.Getuid())
	}
	if _, err := Host.UID(1 << 30); err == nil {
		t.Fatal("the uid of a pid that cannot exist was read")
	}
}

func TestParseUID(t *testing.T) {
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		uid        uint32
		ok         bool
	}{
		{"this process, whole", string(self), uint32(os.Getuid()), true},
		{"this process, as UID reads it", string(self[:min(len(self), 512)]), uint32(os.Getuid()), true},
		{"first line", "Uid:\t7\t8\t9\t10\n", 7, true},
		{"a name that says Uid", "Name:\tUid:\\t0\nUid:\t1000\t0\t0\t0\n", 1000, true},
		{"cut off", "Name:\tx\nUid:\t10", 0, false},
		{"no numbers", "Uid:\n", 0, false},
		{"not a number", "Uid:\tx\t1\n", 0, false},
		{"too large", "Uid:\t4294967296\t0\t0\t0\n", 0, false},
		{"none", "Name:\tx\nGid:\t0\n", 0, false},
		{"empty", "", 0, false},
	} {
		uid, ok := parseUID([]byte(c.text))
		if uid != c.uid || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, uid, ok, c.uid, c.ok)
		}
	}
}

// TestUIDLineWithinWhatIsRead: the Uid line of a process with the longest
// name status shows (15 bytes, each escaped to 4) ends within the 512
// bytes UID reads.
func TestUIDLineWithinWhatIsRead(t *testing.T) {
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	name, _, _ := strings.Cut(string(self), "\n")
	at := strings.Index(string(self), "\nUid:")
	end := at + 1 + strings.Index(string(self[at+1:]), "\n")
	if worst := end + 1 - len(name) + len("Name:\t") + 15*4; at < 0 || worst > 512 {
		t.Fatalf("the Uid line ends at byte %d with a 60-byte name", worst)
	}
}

// FuzzParseUID holds parseUID to the plain reading of a status file:
// the first whole line that starts "Uid:", whose first field is the uid.
func FuzzParseUID(f *testing.F) {
	self, _ := os.ReadFile("/proc/self/status")
	f.Add(self)
	f.Add(self[:min(len(self), 512)])
	f.Add([]byte("Uid:\t7\t8\t9\t10\n"))
	f.Add([]byte("Uid:\t10"))
	f.Add([]byte("Name:\tUid:\\t0\nUid: \v+1000\t0\t0\t0\nUid:\t5\n"))
	f.Add([]byte("Uid:\t4294967296\t0\t0\t0\nUid:\t1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		uid, ok := parseUID(b)
		lines := strings.Split(string(b), "\n")
		var want uint64
		var wantOK bool
		for _, line := range lines[:len(lines)-1] { // the last is cut off
			rest, found := strings.CutPrefix(line, "Uid:")
			if !found {
				continue
			}
			if f := strings.Fields(rest); len(f) > 0 {
				n, err := strconv.ParseUint(f[0], 10, 32)
				want, wantOK = n, err == nil
			}
			break
		}
		if ok != wantOK || (ok && uint64(uid) != want) {
			t.Fatalf("parseUID(%q) = %d, %v; want %d, %v", b, uid, ok, want, wantOK)
		}
	})
}
