package main

import (
	"os"
	"strings"
)

// confinement reports whether "postern run" can confine a run here.
func confinement() finding {
	f := finding{Check: "confinement"}
	var missing []string
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		missing = append(missing, "user namespaces are disabled (user.max_user_namespaces = 0)")
	} else if err != nil {
		missing = append(missing, "no user namespaces")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		missing = append(missing, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)")
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
