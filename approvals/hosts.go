package approvals

import (
	"path/filepath"
	"strings"
)

// sshArgOptions are the ssh(1) options that take an argument.
const sshArgOptions = "BbcDEeFIiJLlmOoPpQRSWw"

// hostCandidates returns the names an ssh command line claims for its
// destination: the host argument, its "[host]:port" form when -p is
// given, and HostKeyAlias. They are claims; they become names only when
// one hashes to a known_hosts entry holding the verified host key.
func hostCandidates(argv []string) []string {
	if len(argv) == 0 || filepath.Base(argv[0]) != "ssh" {
		return nil
	}
	var host, port string
	var out []string
	for i := 1; i < len(argv) && host == ""; i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			host = a
			break
		}
		if a == "--" {
			if i+1 < len(argv) {
				host = argv[i+1]
			}
			break
		}
		for j := 1; j < len(a); j++ {
			if !strings.ContainsRune(sshArgOptions, rune(a[j])) {
				continue
			}
			val := a[j+1:]
			if val == "" && i+1 < len(argv) {
				i++
				val = argv[i]
			}
			switch a[j] {
			case 'p':
				port = val
			case 'o':
				k, v, _ := strings.Cut(val, "=")
				if strings.EqualFold(strings.TrimSpace(k), "HostKeyAlias") {
					out = append(out, strings.TrimSpace(v))
				}
			}
			break
		}
	}
	if rest, ok := strings.CutPrefix(host, "ssh://"); ok {
		host = rest
		if i := strings.IndexByte(host, '/'); i >= 0 {
			host = host[:i]
		}
		if h, p, ok := strings.Cut(host, ":"); ok {
			host, port = h, p
		}
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if host != "" {
		out = append(out, host)
		if port != "" && port != "22" {
			out = append(out, "["+host+"]:"+port)
		}
	}
	return out
}
