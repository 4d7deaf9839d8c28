package confine

import (
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/smallfile"
)

// A gitSetting is one key of a git configuration file: its section as
// git names it ("core", "includeif.gitdir:~/work/"), its key, both
// lower-cased except the subsection, and its value.
type gitSetting struct{ section, key, value string }

// maxGitFile bounds what is read of a git file a run may have written (a
// configuration, a .git or gitdir file): far above a real one. Such a
// file may also be a FIFO or a link to a device (package smallfile).
const maxGitFile = 4 << 20

// readGitConfig reads the settings of the git configuration file at p,
// enough of git's syntax to find what names other files: sections with
// and without a quoted subsection, comments, quoted values. Lines it
// cannot read are skipped; a missing file has none.
func readGitConfig(p string) []gitSetting {
	b, err := smallfile.Read(p, maxGitFile)
	if err != nil {
		return nil
	}
	var out []gitSetting
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			head, rest, ok := strings.Cut(line[1:], "]")
			if !ok {
				section = ""
				continue
			}
			name, sub, quoted := strings.Cut(head, " ")
			section = strings.ToLower(strings.TrimSpace(name))
			if quoted {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			line = strings.TrimSpace(rest) // a setting may follow the header
		}
		if line == "" || line[0] == '#' || line[0] == ';' || section == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			v, _, _ = strings.Cut(v[1:], `"`)
		} else if i := strings.IndexAny(v, "#;"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		out = append(out, gitSetting{section, strings.ToLower(strings.TrimSpace(k)), v})
	}
	return out
}

// gitPath resolves a path a git configuration file at config names: ~/
// from the home directory, a relative one from the file's directory.
func gitPath(config, v, home string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(v, "~/"):
		if home == "" {
			return ""
		}
		v = filepath.Join(home, v[2:])
	case !filepath.IsAbs(v):
		v = filepath.Join(filepath.Dir(config), v)
	}
	return filepath.Clean(v)
}

// maxIncludes bounds the files that includes bring in, as git bounds
// their depth.
const maxIncludes = 64

// gitIncludes returns the files the configuration files configs include
// (include.path, and includeIf's path whatever its condition), and the
// files those include in turn.
func gitIncludes(configs []string, home string) []string {
	var out []string
	seen := map[string]bool{}
	queue := append([]string(nil), configs...)
	for len(queue) > 0 && len(out) < maxIncludes {
		c := queue[0]
		queue = queue[1:]
		for _, st := range readGitConfig(c) {
			if st.key != "path" || (st.section != "include" && !strings.HasPrefix(st.section, "includeif.")) {
				continue
			}
			p := gitPath(c, st.value, home)
			if p == "" || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
			queue = append(queue, p)
		}
	}
	return out
}
