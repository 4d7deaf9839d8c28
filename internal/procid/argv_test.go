package procid_test

import (
	"encoding/binary"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/postern/postern/internal/procid"
	"github.com/postern/postern/internal/procid/proctest"
)

func TestParseCmdline(t *testing.T) {
	for in, want := range map[string][]string{
		"":                           nil,
		"\x00\x00":                   nil,
		"ssh\x00-p\x002222\x00h\x00": {"ssh", "-p", "2222", "h"},
		"ssh\x00\x00host\x00":        {"ssh", "", "host"},
		"bash -c rewritten title":    {"bash -c rewritten title"},
	} {
		if got := procid.ParseCmdline([]byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCmdline(%q) = %q, want %q", in, got, want)
		}
	}
}

// procArgs2 builds a KERN_PROCARGS2 buffer as macOS lays it out.
func procArgs2(argc int32, exe string, pad int, rest string) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(argc))
	b = append(b, exe...)
	b = append(b, make([]byte, 1+pad)...)
	return append(b, rest...)
}

func TestParseProcArgs2(t *testing.T) {
	tests := []struct {
		in   []byte
		exe  string
		argv []string
	}{
		{procArgs2(3, "/usr/bin/ssh", 3, "ssh\x00-p\x002222\x00HOME=/x\x00"), "/usr/bin/ssh", []string{"ssh", "-p", "2222"}},
		{procArgs2(1, "/bin/sh", 0, "sh\x00PATH=/bin\x00"), "/bin/sh", []string{"sh"}},
		{procArgs2(2, "/bin/sh", 0, ""), "/bin/sh", nil},                          // no arguments left
		{procArgs2(5, "/bin/sh", 1, "sh\x00-c"), "/bin/sh", []string{"sh", "-c"}}, // truncated
		{procArgs2(-1, "/bin/sh", 1, "sh\x00"), "/bin/sh", nil},
		{[]byte{1, 0}, "", nil},
		{append(binary.NativeEndian.AppendUint32(nil, 1), "/no/nul"...), "/no/nul", nil},
	}
	for _, tt := range tests {
		exe, argv := procid.ParseProcArgs2(tt.in)
		if exe != tt.exe || !reflect.DeepEqual(argv, tt.argv) {
			t.Errorf("ParseProcArgs2(%q) = %q %q, want %q %q", tt.in, exe, argv, tt.exe, tt.argv)
		}
	}
}

// FuzzParseProcArgs2 reads a KERN_PROCARGS2 buffer, which the process
// wrote. The arguments are at most argc, never more than the buffer's
// bytes, and a buffer laid out from an executable and NUL-free
// arguments gives them back.
func FuzzParseProcArgs2(f *testing.F) {
	f.Add(procArgs2(3, "/usr/bin/ssh", 3, "ssh\x00-p\x002222\x00HOME=/x\x00"))
	f.Add(procArgs2(1<<30, "/bin/sh", 0, "sh\x00"))
	f.Add(procArgs2(-1, "/bin/sh", 0, "sh\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		exe, argv := procid.ParseProcArgs2(b)
		if len(argv) > len(b) || len(b) >= 4 && len(argv) > max(int(int32(binary.NativeEndian.Uint32(b))), 0) {
			t.Fatalf("%d arguments from %d bytes", len(argv), len(b))
		}
		// Laid out again, with each argument's NUL and the
		// environment after, the buffer reads the same.
		if len(argv) == 0 || exe == "" || strings.Contains(strings.Join(argv, ""), "\x00") || slices.Contains(argv, "") {
			return
		}
		again := procArgs2(int32(len(argv)), exe, 2, strings.Join(argv, "\x00")+"\x00HOME=/x\x00")
		if exe2, argv2 := procid.ParseProcArgs2(again); exe2 != exe || !slices.Equal(argv2, argv) {
			t.Fatalf("%q %q laid out again read as %q %q", exe, argv, exe2, argv2)
		}
	})
}

// FuzzParseCmdline reads /proc/PID/cmdline, which the process can
// rewrite: its arguments are the NUL-ended strings before the trailing
// NULs.
func FuzzParseCmdline(f *testing.F) {
	for _, s := range []string{"", "\x00\x00", "ssh\x00-p\x002222\x00h\x00", "ssh\x00\x00host\x00", "bash -c rewritten title"} {
		f.Add([]byte(s))
	}
	if self, err := os.ReadFile("/proc/self/cmdline"); err == nil {
		f.Add(self)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := procid.ParseCmdline(b)
		var want []string
		if rest := strings.TrimRight(string(b), "\x00"); rest != "" {
			want = strings.Split(rest, "\x00")
		}
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("ParseCmdline(%q) = %q, want %q", b, got, want)
		}
	})
}

func TestArgv(t *testing.T) {
	f := proctest.New(t)
	f.Set(10, 1, 100, f.Exe("ssh", "ssh"), "ssh", "-p", "2222", "prod-db-1")
	if got, want := f.Table.Argv(10), []string{"ssh", "-p", "2222", "prod-db-1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Argv = %q, want %q", got, want)
	}
	// Command lines of 4 KiB and more are read whole too ("sh", NUL, n
	// bytes, NUL: 4,095, 4,096 and 4,097 bytes, and more).
	for _, n := range []int{4091, 4092, 4093, 5000, 200000} {
		long := strings.Repeat("a", n)
		f.Set(11, 1, 110, f.Exe("sh", "sh"), "sh", long)
		if got := f.Table.Argv(11); len(got) != 2 || got[1] != long {
			t.Fatalf("Argv of a %d-byte argument: %d arguments, the second %d bytes", n, len(got), len(got[len(got)-1]))
		}
	}
	f.Kill(10)
	if got := f.Table.Argv(10); got != nil {
		t.Fatalf("Argv of a gone process = %q", got)
	}
}
