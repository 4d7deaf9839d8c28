package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/bastion/journal"
	"github.com/postern/postern/gateway/api"
)

// tempHome points the home directory, the XDG directories and
// SSH_AUTH_SOCK into a directory of the test's own, and returns it.
func tempHome(t *testing.T) string {
	dir := t.TempDir()
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "HOME"} {
		t.Setenv(v, dir)
	}
	t.Setenv("SSH_AUTH_SOCK", filepath.Join(dir, "agent.sock"))
	return dir
}

// What a person found out (--evidence) goes with what it shows (--ran,
// --not-started, ...): given alone, resolve read the markers and dropped
// it, or said it needed a gateway, never that it was not taken.
func TestJournalResolveEvidenceNeedsAResult(t *testing.T) {
	tempHome(t)
	var out, errw strings.Builder
	code := run([]string{"journal", "resolve", "01M91G6N375J", "--evidence", "ps on the host shows it ran"}, &out, &errw)
	if code != exitUsage || !strings.Contains(errw.String(), "--evidence") {
		t.Fatalf("resolve with --evidence alone: exit %d, %q", code, errw.String())
	}
}

// postern-journal(1) names the keys of an entry's end and unknown
// outcome inside their parentheses, as --json nests them: bytes_in,
// output_tail and the rest are keys of end, not of the entry.
func TestManJournalNestsEndAndUnknownKeys(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "man", "postern-journal.1"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for key, v := range map[string]any{"end": api.JournalEntry{}.End, "unknown": api.JournalEntry{}.Unknown} {
		i := slices.Index(lines, ".Li "+key)
		if i < 0 || i+1 == len(lines) || !strings.HasPrefix(lines[i+1], ".Pq ") {
			t.Fatalf("postern-journal(1) names no %s (...) group", key)
		}
		group := lines[i+1]
		keys := map[string]bool{}
		jsonKeys(reflect.TypeOf(v), map[reflect.Type]bool{}, keys)
		for k := range keys {
			if !regexp.MustCompile(`Li ` + regexp.QuoteMeta(k) + `\b`).MatchString(group) {
				t.Errorf("postern-journal(1) does not name %q inside %s (...): %s", k, key, group)
			}
		}
	}
}

// postern-journal(1) names every word a journal entry's outcome is told
// in (end's outcome, unknown's reason and last_phase, a resolution's by
// and result, the kind), as the journal declares them: a script reading
// --json, and a person reading list, finds what each means.
func TestManJournalNamesEveryOutcomeWord(t *testing.T) {
	src := filepath.Join("..", "..", "bastion", "journal", "entry.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "man", "postern-journal.1"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, name := range v.Names {
				if !slices.ContainsFunc([]string{"Kind", "Outcome", "Reason", "Phase", "By", "Result"}, func(p string) bool { return strings.HasPrefix(name.Name, p) }) || i >= len(v.Values) {
					continue
				}
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				word, _ := strconv.Unquote(lit.Value)
				n++
				if !regexp.MustCompile(`(Li|Dq) ` + regexp.QuoteMeta(word) + `\b`).Match(page) {
					t.Errorf("postern-journal(1) does not name %q (journal.%s)", word, name.Name)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d words in %s", n, src)
	}
}

// journal show offers resolve's probe only for an entry resolve can
// take: one whose outcome is unknown. Of an entry that ran with markers
// and completed, or one resolved since, it says only that markers were
// on, where it said resolve could read them, and resolve then refused.
func TestJournalShowOffersTheProbeOnlyForAnUnknownEntry(t *testing.T) {
	now := time.Now()
	completed := &api.JournalEntry{ID: "J1", Kind: journal.KindExec, Command: []byte("make deploy"), Marker: true,
		Target: journal.Target{User: "u", Host: "h", Port: 22}, Started: now,
		End: &journal.End{At: now, Outcome: api.OutcomeExited}}
	unknown := &api.JournalEntry{ID: "J2", Kind: journal.KindExec, Command: []byte("make deploy"), Marker: true,
		Target: journal.Target{User: "u", Host: "h", Port: 22}, Started: now,
		Unknown: &journal.Unknown{At: now, Reason: journal.ReasonUpstreamLost, LastPhase: journal.PhaseDispatched}}
	for e, offered := range map[*api.JournalEntry]bool{completed: false, unknown: true} {
		var b bytes.Buffer
		printEntry(&b, e)
		if got := strings.Contains(b.String(), "postern journal resolve"); got != offered {
			t.Errorf("journal show of a %s entry offers resolve's probe: %v\n%s", e.Status(), got, b.String())
		}
	}
}
