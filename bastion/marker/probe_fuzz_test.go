package marker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/postern/postern/bastion/journal"
)

// FuzzParseProbe reads a host's answer to a probe, which the host
// writes as it likes. A report read is a resolution the journal takes,
// and what a login script prints before the report changes nothing.
func FuzzParseProbe(f *testing.F) {
	const id = "01M8N7K5YANAXYX35XDKKVHY1R"
	report := func(lines ...string) string {
		return "postern-probe 1 " + id + "\r\n" + strings.Join(lines, "\n") + "\npostern-probe end\ntrailing noise\n"
	}
	for _, s := range []string{
		report("state=fenced_now"),
		report("state=present", "start.started=1", "exit.status=0", "exit.signal=", "lock=free"),
		report("state=present", "start.started=1", "exit.status=+255", "exit.status=1", "lock=free"),
		report("state=present", "start.started=1", "exit.status=-1", "lock=free"),
		report("state=present", "start.started=1", "aborted.signal=HUP", "lock=free"),
		report("state=present", "fenced.at=1", "lock=free"),
		report("state=present", "start.started=1", "start.pid=4", "lock=held"),
		report("state=present", "start.started=1", "start.boot_id=a", "boot_id_now=b", "lock=free"),
		report("state=unavailable"),
		"postern-probe 1 " + id + "\nstate=present\n",
		"postern-probe 1 " + id + "\npostern-probe 1 " + id + "\npostern-probe end\n",
		"",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, out []byte, accepted bool) {
		r, err := ParseProbe(id, out, accepted)
		if err != nil {
			return
		}
		if r.By != journal.ByProbe {
			t.Fatalf("a resolution by %q", r.By)
		}
		switch r.Result {
		case journal.ResultRan:
			if r.ExitStatus == nil || *r.ExitStatus < 0 || *r.ExitStatus > 255 {
				t.Fatalf("ran with exit status %v", r.ExitStatus)
			}
		case journal.ResultNotStarted, journal.ResultStillRunning, journal.ResultInconclusive:
			if r.ExitStatus != nil {
				t.Fatalf("%s with an exit status", r.Result)
			}
		default:
			t.Fatalf("result %q", r.Result)
		}
		greeted := append([]byte("Last login: Fri Dec  4 from 10.0.0.1\n"), out...)
		if len(greeted) > MaxProbeOutput {
			return
		}
		r2, err := ParseProbe(id, greeted, accepted)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("a greeting before the report changed\n%+v\nto\n%+v (%v)", r, r2, err)
		}
	})
}
