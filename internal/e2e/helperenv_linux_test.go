package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/postern/postern/internal/preloadtest"
)

// The OpenSSH helper a token's keys are loaded into sees the token's PIN
// and signs with its keys; the only library loaded into it beyond its
// own is the provider -P allowed. A library named for the loader in the
// environment the gateway started from, in LD_PRELOAD or in a directory
// of LD_LIBRARY_PATH, is not: the gateway starts the helper with the
// variables a provider reads and no others. The helper's environment is
// read from /proc, and the library from preloadtest tells whether it ran
// there.
func TestNoLoaderVariableReachesAHelper(t *testing.T) {
	need(t, "ssh-add")
	e := newEnv(t)
	tokenNoCards(t, e)
	lib := preloadtest.Build(t, e.Dir)
	libs := e.Path("libs")
	if err := os.Mkdir(libs, 0o700); err != nil {
		t.Fatal(err)
	}
	e.Setenv("LD_PRELOAD", lib.Path)
	e.Setenv("LD_LIBRARY_PATH", libs)
	a := e.StartAgent()
	e.Unsetenv("LD_PRELOAD")
	e.Unsetenv("LD_LIBRARY_PATH")

	e.MustRun("ssh-add", "-s", softhsm)
	helpers := childrenNamed(a.PID(), "ssh-pkcs11-help")
	if len(helpers) != 1 {
		t.Fatalf("%d ssh-pkcs11-helper running for the gateway with the token's keys loaded, want 1", len(helpers))
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", helpers[0]))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	var conf bool
	for _, kv := range env {
		if strings.HasPrefix(kv, "LD_") {
			t.Errorf("ssh-pkcs11-helper runs with %s", kv)
		}
		conf = conf || kv == "SOFTHSM2_CONF="+e.Getenv("SOFTHSM2_CONF")
	}
	if !conf {
		t.Errorf("ssh-pkcs11-helper's environment lacks the token's SOFTHSM2_CONF: %q", env)
	}
	if lib.LoadedInto(helpers[0]) {
		t.Errorf("the library named in LD_PRELOAD ran in ssh-pkcs11-helper (pid %d)", helpers[0])
	}
}
