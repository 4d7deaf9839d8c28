package approvals

import (
	"path/filepath"
	"strings"

	"github.com/postern/postern/internal/getopt"
)

// sshOptions is ssh(1)'s getopt string (SSH_OPTS in OpenSSH's ssh.c,
// 9.4 and later; before 9.4, -P took no value).
const sshOptions = "1246ab:c:e:fgi:kl:m:no:p:qstvxAB:CD:E:F:GI:J:KL:MNO:P:Q:R:S:TVw:W:XYy"

// hostCandidates returns the names an ssh command line claims for its
// destination: the host argument, its "[host]:port" form when -p is
// given, and HostKeyAlias. They are claims; they become names only when
// one hashes to a known_hosts entry holding the verified host key. The
// command line is parsed as ssh parses it, options after the destination
// included; one ssh itself would refuse claims nothing.
func hostCandidates(argv []string) []string {
	if len(argv) == 0 || filepath.Base(argv[0]) != "ssh" {
		return nil
	}
	var host, port string
	var out []string
	args := argv[1:]
	for {
		opts, rest, err := getopt.Parse(args, sshOptions)
		if err != nil {
			return nil
		}
		for _, o := range opts {
			switch o.Name {
			case 'p':
				port = o.Value
			case 'o':
				k, v, _ := strings.Cut(o.Value, "=")
				if strings.EqualFold(strings.TrimSpace(k), "HostKeyAlias") {
					out = append(out, strings.TrimSpace(v))
				}
			}
		}
		// As ssh does: after the destination, options may follow, unless
		// "--" ended them.
		ended := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
		if host == "" && len(rest) > 0 {
			host, rest = rest[0], rest[1:]
		} else {
			break
		}
		if ended || len(rest) == 0 {
			break
		}
		args = rest
	}
	if rest, ok := strings.CutPrefix(host, "ssh://"); ok {
		host = rest
		if i := strings.IndexByte(host, '/'); i >= 0 {
			host = host[:i]
		}
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		// An IPv6 address is in brackets, the port after them.
		if in, after, ok := strings.Cut(strings.TrimPrefix(host, "["), "]"); ok && strings.HasPrefix(host, "[") {
			host = in
			if p, ok := strings.CutPrefix(after, ":"); ok {
				port = p
			}
		} else if h, p, ok := strings.Cut(host, ":"); ok {
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
