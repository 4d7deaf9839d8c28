package main

import (
	"os"
	"strings"

	"github.com/postern/postern/internal/confine"
)

// procSys is where the kernel's settings are read, and doctorEUID whose
// runs are confined; tests point them elsewhere.
var (
	procSys    = "/proc/sys"
	doctorEUID = os.Geteuid
)

// confinement reports whether "postern run" can confine a run here: what
// keeps it from making the run's user namespace, as postern run judges it
// (confine.Cause), and whether Landlock adds its rules.
func confinement() finding {
	f := finding{Check: "confinement"}
	var missing []string
	if _, err := os.Stat(procSys + "/user/max_user_namespaces"); err != nil {
		missing = append(missing, "no user namespaces")
	} else if c := confine.Cause(procSys, doctorEUID()); c != "" {
		missing = append(missing, c)
	}
	if b, err := os.ReadFile("/sys/kernel/security/lsm"); err == nil && !strings.Contains(string(b), "landlock") {
		missing = append(missing, "Landlock is not enabled (not in /sys/kernel/security/lsm)")
	}
	if len(missing) > 0 {
		f.Status, f.Detail, f.Fix = "warn", strings.Join(missing, "; "), "enable them, or accept unconfined runs (the card says so)"
		return f
	}
	f.Status, f.Detail = "ok", "user namespaces available"
	return f
}
