package askpass

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stub writes an askpass program that records its prompt and the
// SSH_ASKPASS_PROMPT it saw, then prints out and exits with code.
func stub(t *testing.T, out string, code int) (prog, log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	prog = filepath.Join(dir, "askpass")
	script := "#!/bin/sh\nprintf '%s|%s\\n' \"$SSH_ASKPASS_PROMPT\" \"$1\" >> " + log + "\nprintf '" + out + "'\nexit " + string(rune('0'+code)) + "\n"
	os.WriteFile(prog, []byte(script), 0o755)
	return prog, log
}

func TestConfirm(t *testing.T) {
	cases := []struct {
		out  string
		code int
		want bool
	}{{"", 0, true}, {"yes\n", 0, true}, {"no\n", 0, false}, {"", 1, false}}
	for _, c := range cases {
		prog, log := stub(t, c.out, c.code)
		env := Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force", "SSH_ASKPASS_PROMPT=leaked"}
		got, err := env.Confirm(context.Background(), "Allow use of key?")
		if err != nil || got != c.want {
			t.Errorf("out %q code %d: got %v %v", c.out, c.code, got, err)
		}
		b, _ := os.ReadFile(log)
		if string(b) != "confirm|Allow use of key?\n" {
			t.Errorf("askpass saw %q", b)
		}
	}
}

func TestUnavailable(t *testing.T) {
	prog, _ := stub(t, "", 0)
	for _, env := range []Env{
		{},
		{"SSH_ASKPASS=" + prog}, // no display
		{"SSH_ASKPASS=" + prog, "DISPLAY=:0", "SSH_ASKPASS_REQUIRE=never"},
		{"DISPLAY=:0"}, // no program
	} {
		ok, err := env.Confirm(context.Background(), "x")
		if ok || err == nil {
			t.Errorf("%q: confirm = %v, %v; want a refusal with an error", env, ok, err)
		}
	}
	// force works without a display.
	if ok, err := (Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}).Confirm(context.Background(), "x"); !ok || err != nil {
		t.Errorf("force: %v %v", ok, err)
	}
}

func TestTimeoutIsNo(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "slow")
	os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	ok, err := (Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}).Confirm(ctx, "x")
	if ok || err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("slow askpass: %v %v after %v", ok, err, time.Since(start))
	}
}

func TestPassphrase(t *testing.T) {
	prog, _ := stub(t, "s3cret pass\\n", 0)
	p, err := (Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}).Passphrase(context.Background(), "Passphrase:")
	if err != nil || string(p) != "s3cret pass" {
		t.Fatalf("%q %v", p, err)
	}
	empty, _ := stub(t, "\\n", 0)
	if _, err := (Env{"SSH_ASKPASS=" + empty, "SSH_ASKPASS_REQUIRE=force"}).Passphrase(context.Background(), "p"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty passphrase: %v", err)
	}
}

func TestWord(t *testing.T) {
	cases := []struct {
		out  string
		code int
		want string
	}{{"prod-db-1\\n", 0, "prod-db-1"}, {"prod-db-1", 0, "prod-db-1"}, {"\\n", 0, ""}, {"prod-db-1\\n", 1, ""}}
	for _, c := range cases {
		prog, log := stub(t, c.out, c.code)
		got, err := (Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force", "SSH_ASKPASS_PROMPT=confirm"}).Word(context.Background(), "Type it")
		if err != nil || got != c.want {
			t.Errorf("out %q exit %d: %q %v, want %q", c.out, c.code, got, err, c.want)
		}
		// Asked as a passphrase is: no SSH_ASKPASS_PROMPT, whatever the
		// gateway's own environment held.
		if l, _ := os.ReadFile(log); string(l) != "|Type it\n" {
			t.Errorf("asked with %q", l)
		}
	}
	if _, err := (Env{"SSH_ASKPASS=/nonexistent/askpass", "SSH_ASKPASS_REQUIRE=force"}).Word(context.Background(), "x"); err == nil {
		t.Error("a program that cannot run gave no error")
	}
}

// A program that prints without end (or megabytes, then yes) is no
// answer, and what the gateway holds of its output stays bounded: its
// output is read up to maxOutput, and past it the question fails.
func TestOutputPastTheBoundIsNoAnswer(t *testing.T) {
	dir := t.TempDir()
	flood := filepath.Join(dir, "flood")
	os.WriteFile(flood, []byte("#!/bin/sh\nhead -c 16777216 /dev/zero | tr '\\0' '\\n'\necho yes\n"), 0o755)
	endless := filepath.Join(dir, "endless")
	os.WriteFile(endless, []byte("#!/bin/sh\nexec yes\n"), 0o755)
	for _, prog := range []string{flood, endless} {
		env := Env{"SSH_ASKPASS=" + prog, "SSH_ASKPASS_REQUIRE=force"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		ok, err := env.Confirm(ctx, "Allow?")
		cancel()
		if ok || err == nil || !strings.Contains(err.Error(), "printed more than") {
			t.Errorf("%s: confirm = %v, %v; want no, with an error naming the bound", filepath.Base(prog), ok, err)
		}
		if p, err := env.Passphrase(context.Background(), "Passphrase:"); err == nil {
			t.Errorf("%s: passphrase of %d bytes taken", filepath.Base(prog), len(p))
		}
	}
}

// What a program printed before it went past the bound (a passphrase,
// then more) is wiped, not only dropped: the buffer it was read into is
// zeroed before it is let go.
func TestOutputPastTheBoundIsWiped(t *testing.T) {
	var b boundedBuffer
	if _, err := b.Write([]byte("the passphrase\n")); err != nil {
		t.Fatal(err)
	}
	held := b.Bytes()
	if _, err := b.Write(make([]byte, maxOutput)); err == nil {
		t.Fatal("a write past the bound was taken")
	}
	if strings.Trim(string(held), "\x00") != "" {
		t.Errorf("after a write past the bound, the buffer still holds %q", held)
	}
	if _, err := b.Write([]byte("yes\n")); err == nil || len(b.Bytes()) != 0 {
		t.Errorf("a write after the bound was passed: %v, %d bytes held", err, len(b.Bytes()))
	}
}
