package gateway

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/postern/postern/"

// layer places a package of the module in the layout the design draws:
// the command line on top, the gateway below it, its contract below
// that, then the agent protocol and the bastion, the approvals, the audit
// log, and the support packages under internal/ at the bottom. Packages
// of one family (bastion and bastion/journal; everything under internal/)
// share a layer.
func layer(pkg string) (rank int, family string) {
	p := strings.TrimPrefix(pkg, module)
	top, _, _ := strings.Cut(p, "/")
	switch {
	case top == "cmd":
		return 6, p
	case p == "gateway":
		return 5, p
	case p == "gateway/api":
		return 4, p
	case top == "sshagent" || top == "bastion":
		return 3, top
	case top == "approvals":
		return 2, top
	case top == "audit":
		return 1, top
	case top == "internal":
		return 0, top
	}
	return -1, p
}

// Dependencies point one way, down the layers, and never sideways
// between families (sshagent and bastion never import each other).
// The command line imports no product package but the gateway, to start
// the daemon, and its contract in gateway/api.
func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		pkg, imports, deps := f[0], strings.Fields(f[1]), strings.Fields(f[2])
		rank, family := layer(pkg)
		if rank < 0 {
			t.Errorf("%s has no place in the layout", pkg)
			continue
		}
		seen++
		for _, d := range deps {
			if !strings.HasPrefix(d, module) {
				continue
			}
			r, fam := layer(d)
			if r > rank || (r == rank && fam != family) {
				t.Errorf("%s depends on %s, which is not below it", pkg, d)
			}
		}
		if strings.HasPrefix(pkg, module+"cmd/") {
			for _, d := range imports {
				if r, _ := layer(d); strings.HasPrefix(d, module) && r > 0 && d != module+"gateway" && d != module+"gateway/api" {
					t.Errorf("%s imports %s: the command line goes through gateway/api", pkg, d)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list found only %d packages:\n%s", seen, out)
	}
}
