package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The confinement check says what keeps postern run from confining a run
// here, and says nothing is in the way only when postern run finds
// nothing in the way: Ubuntu's AppArmor restriction on unprivileged user
// namespaces among them.
func TestDoctorConfinementAsPosternRunFindsIt(t *testing.T) {
	defer func(sys string, euid func() int) { procSys, doctorEUID = sys, euid }(procSys, doctorEUID)
	procSys = t.TempDir()
	set := func(name, v string) {
		p := filepath.Join(procSys, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("user/max_user_namespaces", "100")
	for _, tt := range []struct {
		setting, value string
		euid           int
		want           string // "" for no warning about user namespaces
	}{
		{"kernel/apparmor_restrict_unprivileged_userns", "1", 1000, "AppArmor"},
		{"kernel/apparmor_restrict_unprivileged_userns", "0", 1000, ""},
		{"kernel/unprivileged_userns_clone", "0", 1000, "unprivileged_userns_clone = 0"},
		// root's runs are held back by neither
		{"kernel/unprivileged_userns_clone", "0", 0, ""},
		{"user/max_user_namespaces", "0", 0, "max_user_namespaces = 0"},
	} {
		set(tt.setting, tt.value)
		doctorEUID = func() int { return tt.euid }
		f := confinement()
		if tt.want != "" && (f.Status != "warn" || !strings.Contains(f.Detail, tt.want)) ||
			tt.want == "" && strings.Contains(f.Detail, "namespaces") && f.Status == "warn" {
			t.Errorf("%s = %s, euid %d: %s %s, want %q", tt.setting, tt.value, tt.euid, f.Status, f.Detail, tt.want)
		}
		os.Remove(filepath.Join(procSys, tt.setting))
		set("user/max_user_namespaces", "100")
	}
}
