package main

// The man pages in man/ are the contract the command line keeps: these
// tests hold the two to each other where a reader would trip on a gap.

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/gateway/api"
	"github.com/postern/postern/internal/config"
)

// manSection returns the lines of section name (".Sh NAME") of a man page.
func manSection(t *testing.T, page, name string) []string {
	t.Helper()
	lines, err := readManSection(page, name)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// readManSection returns the lines of section name of a man page, or an
// error when it has none.
func readManSection(page, name string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("..", "..", "man", page))
	if err != nil {
		return nil, err
	}
	var lines []string
	in := false
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, ".Sh ") {
			in = l == ".Sh "+name
			continue
		}
		if in {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s has no %s section", page, name)
	}
	return lines, nil
}

// usageStatus is how an EXIT STATUS section says that a usage error
// exits 2.
var usageStatus = regexp.MustCompile(`(?i)\b2 on a usage error|\.It 2 Usage error`)

// TestManExitStatusSaysUsage: every command exits 2 on a usage error
// (postern(1)), and each page's EXIT STATUS says so for each command of
// its synopsis. A section that speaks of its commands one by one
// (".Nm postern doctor" then "exits …") says it for each.
func TestManExitStatusSaysUsage(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	for _, p := range pages {
		page := filepath.Base(p)
		cmds, said, err := exitStatusSaid(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cmds {
			// Words before any command's name are for all of them.
			if !usageStatus.MatchString(said[""] + said[c]) {
				t.Errorf("%s: EXIT STATUS does not say that postern %s exits 2 on a usage error", page, c)
			}
		}
		if len(cmds) == 0 && !usageStatus.MatchString(said[""]) {
			t.Errorf("%s: EXIT STATUS does not say that a usage error exits 2", page)
		}
	}
}

// exitStatusSaid returns the commands of a man page's SYNOPSIS and what
// its EXIT STATUS says of each: said[""] holds the words before any
// command's name (for all of them), said[c] those after ".Nm postern c".
func exitStatusSaid(page string) (cmds []string, said map[string]string, err error) {
	synopsis, err := readManSection(page, "SYNOPSIS")
	if err != nil {
		return nil, nil, err
	}
	for _, l := range synopsis {
		if c, ok := strings.CutPrefix(l, ".Nm postern "); ok && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	status, err := readManSection(page, "EXIT STATUS")
	if err != nil {
		return nil, nil, err
	}
	said = map[string]string{}
	cur := ""
	for _, l := range status {
		if c, ok := strings.CutPrefix(l, ".Nm postern "); ok {
			cur = c
		}
		said[cur] += l + " "
	}
	return cmds, said, nil
}

// documentedStatuses returns what the man pages' EXIT STATUS sections say
// of command name ("unlock", "vault"): the words of each page whose
// SYNOPSIS has it, for all its commands and for name's forms; postern(1)'s
// for a command without a page of its own.
func documentedStatuses(name string) (string, error) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "postern-*.1"))
	if err != nil {
		return "", err
	}
	var words string
	for _, p := range pages {
		cmds, said, err := exitStatusSaid(filepath.Base(p))
		if err != nil {
			return "", err
		}
		page, found := said[""], false
		for _, c := range cmds {
			if strings.Fields(c)[0] == name {
				page, found = page+said[c], true
			}
		}
		if found {
			words += page
		}
	}
	if words != "" {
		return words, nil
	}
	_, said, err := exitStatusSaid("postern.1")
	return said[""], err
}

// words are the lower-case words of s ("journal [list|show ID]" gives
// journal, list, show).
func words(s string) []string {
	return regexp.MustCompile(`[a-z][a-z-]*`).FindAllString(s, -1)
}

// TestHelpNamesEverySubcommand: "postern --help" and postern(1) list each
// command with every subcommand it has (those completion offers), on the
// command's own entry.
func TestHelpNamesEverySubcommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "man", "postern.1"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for l := range strings.Lines(string(b)) {
		if e, ok := strings.CutPrefix(l, ".It Cm "); ok {
			entries = append(entries, e)
		}
	}
	cmds, names := completionCommands()
	for _, name := range names {
		subs := cmds[name].subs
		// The usage line that starts with the command, and the man
		// page's entry that names it.
		var line, entry []string
		for l := range strings.Lines(usage) {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name && strings.HasPrefix(l, "    ") {
				line = words(l)
			}
		}
		names := regexp.MustCompile(`(^|Cm )` + regexp.QuoteMeta(name) + `(\s|$)`)
		for _, e := range entries {
			if names.MatchString(e) {
				entry = words(e)
			}
		}
		if line == nil {
			t.Errorf("postern --help does not list %s", name)
		}
		if entry == nil {
			t.Errorf("postern(1) does not list %s", name)
		}
		for _, s := range subs {
			if line != nil && !slices.Contains(line, s) {
				t.Errorf("postern --help does not list %s %s", name, s)
			}
			if entry != nil && !slices.Contains(entry, s) {
				t.Errorf("postern(1) does not list %s %s", name, s)
			}
		}
	}
}

// duration is a duration as the command line takes it: "90s", "1h30m".
var duration = regexp.MustCompile(`^[0-9]+(ms|[smhdw])([0-9]+(ms|[smhdw]))*$`)

// macro is an mdoc macro name among a line's words.
var macro = regexp.MustCompile(`^[A-Z][a-z][a-z]?$`)

// TestManDurationsAreLiterals: a duration in a page of section 1 is what
// a person types (--since 90m, -t 1h, POSTERN_KDF_TARGET=1s), set as
// literal text (Ql), never as a placeholder (Ar) or a quotation (Dq).
func TestManDurationsAreLiterals(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		literal := false
		for i, l := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(l, ".Bd -literal"):
				literal = true
			case strings.HasPrefix(l, ".Ed"):
				literal = false
			}
			if literal || strings.HasPrefix(l, ".Dl ") || strings.HasPrefix(l, `.\"`) {
				continue
			}
			m := ""
			if !strings.HasPrefix(l, ".") {
				m = "text"
			}
			for _, w := range strings.Fields(strings.TrimPrefix(l, ".")) {
				if macro.MatchString(w) && m != "text" {
					m = w
				}
				if duration.MatchString(strings.TrimRight(w, ",.;:)")) && m != "Ql" {
					t.Errorf("%s:%d: duration %s set as %s, want .Ql: %s", filepath.Base(p), i+1, w, m, l)
				}
			}
		}
	}
}

// synopsisForms returns the command lines of the SYNOPSIS sections of the
// pages of section 1, as "cmd sub" (or "cmd") to the long flags they
// show.
func synopsisForms(t *testing.T) map[string][]string {
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "postern-*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	forms := map[string][]string{}
	for _, p := range pages {
		form, flags := "", []string(nil)
		done := func() {
			if form != "" {
				forms[form] = append(forms[form], flags...)
			}
		}
		for _, l := range manSection(t, filepath.Base(p), "SYNOPSIS") {
			f := strings.Fields(strings.TrimPrefix(l, "."))
			switch {
			case len(f) >= 3 && f[0] == "Nm" && f[1] == "postern":
				done()
				form, flags = strings.Join(f[2:], " "), []string{}
			case len(f) >= 2 && f[0] == "Cm" && form != "" && !strings.Contains(form, " ") && len(flags) == 0:
				// The subcommand, on the line after the command.
				form += " " + f[1]
			}
			for i, w := range f {
				if w == "Fl" && i+1 < len(f) && strings.HasPrefix(f[i+1], "-") && len(f[i+1]) > 2 {
					flags = append(flags, "-"+f[i+1])
				}
			}
		}
		done()
	}
	for k, v := range forms {
		v = slices.DeleteFunc(v, func(s string) bool { return s == "" })
		slices.Sort(v)
		forms[k] = slices.Compact(v)
	}
	return forms
}

// usageForms returns the command lines of the commands' usage texts
// (--help), as synopsisForms does.
func usageForms(t *testing.T) map[string][]string {
	line := regexp.MustCompile(`(?m)^(?:Usage:)?\s*postern ([a-z-]+)((?: [a-z][a-z-]*)?)(.*)$`)
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	forms := map[string][]string{}
	for name, cmd := range commands {
		var h *helpRequest
		if err := cmd([]string{"--help"}, io.Discard, io.Discard); !errors.As(err, &h) {
			t.Errorf("%s --help: %v", name, err)
			continue
		}
		for _, m := range line.FindAllStringSubmatch(h.usage, -1) {
			form := m[1] + m[2]
			forms[form] = append(forms[form], flag.FindAllString(m[3], -1)...)
		}
	}
	for k, v := range forms {
		slices.Sort(v)
		forms[k] = slices.Compact(v)
	}
	return forms
}

// onlyInPostern1 are the commands postern(1) describes, with no page of
// their own.
var onlyInPostern1 = []string{"status", "version", "completion"}

// TestHelpMatchesManSynopsis: each command line a command's --help shows
// is in its man page's SYNOPSIS with the same flags, and the other way
// round.
func TestHelpMatchesManSynopsis(t *testing.T) {
	man, help := synopsisForms(t), usageForms(t)
	for form, flags := range help {
		if slices.Contains(onlyInPostern1, strings.Fields(form)[0]) {
			continue
		}
		mf, ok := man[form]
		if !ok {
			t.Errorf("postern %s: in --help, not in a man page's SYNOPSIS", form)
			continue
		}
		if !slices.Equal(flags, mf) {
			t.Errorf("postern %s: --help shows %v, the man page %v", form, flags, mf)
		}
	}
	for form := range man {
		if _, ok := help[form]; !ok {
			t.Errorf("postern %s: in a man page's SYNOPSIS, not in --help", form)
		}
	}
}

// jsonListings are the values each --json listing prints, with the page
// that documents them.
var jsonListings = []struct {
	page string
	v    any
}{
	{"postern.1", api.Status{}},
	{"postern-approve.1", api.Card{}},
	{"postern-sessions.1", api.SessionsResult{}},
	{"postern-audit.1", api.AuditSession{}},
	{"postern-audit.1", api.AuditEvent{}},
	{"postern-audit.1", api.ActivityLine{}},
	{"postern-audit.1", verifiedJSON{}},
	{"postern-hosts.1", api.Host{}},
	{"postern-vault.1", api.VaultKey{}},
	{"postern-journal.1", api.JournalEntry{}},
	{"postern-why.1", api.WhyResult{}},
	{"postern-doctor.1", api.CheckResult{}},
	{"postern-doctor.1", finding{}},
}

// TestManPagesNameEveryJSONKey: every key a --json listing can print is
// named (.Li or .Dq) on the page that documents the listing, so that a
// script's reader finds what each means.
func TestManPagesNameEveryJSONKey(t *testing.T) {
	for _, l := range jsonListings {
		b, err := os.ReadFile(filepath.Join("..", "..", "man", l.page))
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		jsonKeys(reflect.TypeOf(l.v), map[reflect.Type]bool{}, keys)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !regexp.MustCompile(`(Li|Dq) ` + regexp.QuoteMeta(k) + `\b`).Match(b) {
				t.Errorf("%s does not name the key %q of %T", l.page, k, l.v)
			}
		}
	}
}

// jsonKeys adds the JSON object keys of values of type t, and of the
// values they hold, to keys.
func jsonKeys(t reflect.Type, seen map[reflect.Type]bool, keys map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeFor[time.Time]() {
		return
	}
	seen[t] = true
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case f.Anonymous && name == "":
			jsonKeys(f.Type, seen, keys)
			continue
		case name == "":
			name = f.Name
		}
		keys[name] = true
		jsonKeys(f.Type, seen, keys)
	}
}

// settingSections are the sections of postern.toml(5) that document the
// settings of each table of the file ("" the top level).
var settingSections = map[string]string{
	"":        "SETTINGS",
	"rule":    "POLICY",
	"bastion": "BASTION",
	"audit":   "AUDIT",
	"run":     "RUN",
}

// TestManConfigNamesEverySetting: every setting internal/config reads is
// an item (.It Cm name) of its table's section of postern.toml(5), every
// such item is a setting, and each setting's item says its default: the
// value config.Defaults gives, or, for a setting without one, a
// "Default" all the same, so that no reader guesses.
func TestManConfigNamesEverySetting(t *testing.T) {
	defaults := reflect.ValueOf(config.Defaults())
	for _, table := range slices.Sorted(maps.Keys(settingSections)) {
		section := settingSections[table]
		lines := manSection(t, "postern.toml.5", section)
		v := defaults
		if table != "" {
			f, ok := tomlField(defaults, table)
			if !ok {
				t.Fatalf("internal/config has no table %q", table)
			}
			v = f
			if v.Kind() == reflect.Slice {
				v = reflect.Zero(v.Type().Elem())
			}
		}
		keys := map[string]bool{}
		for f := range v.Type().Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if key == "" || key == "-" {
				continue
			}
			fv := v.FieldByIndex(f.Index)
			if _, sub := settingSections[key]; sub && table == "" {
				continue
			}
			keys[key] = true
			if table == "rule" {
				// A rule's fields match; they have no default.
				if key != "approval" && item(lines, key) == nil {
					t.Errorf("postern.toml(5) %s has no item for rule field %q", section, key)
				}
				continue
			}
			text := item(lines, key)
			if text == nil {
				t.Errorf("postern.toml(5) %s has no item for setting %q", section, key)
				continue
			}
			if err := saysDefault(text, fv); err != nil {
				t.Errorf("postern.toml(5) %s, %q: %v", section, key, err)
			}
		}
		for _, l := range lines {
			if k, ok := itemKey(l); ok && !keys[k] {
				t.Errorf("postern.toml(5) %s documents %q, which internal/config does not read", section, k)
			}
		}
	}
}

// tomlField returns the field of struct v whose toml key is key.
func tomlField(v reflect.Value, key string) (reflect.Value, bool) {
	for f := range v.Type().Fields() {
		if k, _, _ := strings.Cut(f.Tag.Get("toml"), ","); k == key {
			return v.FieldByIndex(f.Index), true
		}
	}
	return reflect.Value{}, false
}

// itemCm is an item of a tag list naming a setting: ".It Cm name No = …".
var itemCm = regexp.MustCompile(`^\.It Cm ([a-z_]+)(\s|$)`)

func itemKey(l string) (string, bool) {
	m := itemCm.FindStringSubmatch(l)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// item returns the lines of the item for key in lines, up to the next
// item or the end of its list, lists nested in it included.
func item(lines []string, key string) []string {
	for i, l := range lines {
		if k, ok := itemKey(l); !ok || k != key {
			continue
		}
		depth := 0
		for j := i + 1; j < len(lines); j++ {
			switch {
			case strings.HasPrefix(lines[j], ".Bl"):
				depth++
			case strings.HasPrefix(lines[j], ".El"):
				if depth == 0 {
					return lines[i:j]
				}
				depth--
			case strings.HasPrefix(lines[j], ".It") && depth == 0:
				return lines[i:j]
			}
		}
		return lines[i:]
	}
	return nil
}

// saysDefault checks that text, an item, says "Default" and, for a
// setting with a default value, names that value after it.
func saysDefault(text []string, v reflect.Value) error {
	joined := strings.Join(text, "\n")
	i := regexp.MustCompile(`(?i)\bdefault\b`).FindStringIndex(joined)
	if i == nil {
		return fmt.Errorf("no default stated")
	}
	after := joined[i[0]:]
	for _, want := range defaultWords(v) {
		if !regexp.MustCompile(`(?m)^\.(Qq|Pa|Dq|Cm) "?` + regexp.QuoteMeta(want) + `"?( |$)`).MatchString(after) {
			return fmt.Errorf("the default is %q, and the page does not say so after %q", want, strings.SplitN(after, "\n", 2)[0])
		}
	}
	return nil
}

// defaultWords are the values a default is written as, one word each:
// none for a zero value.
func defaultWords(v reflect.Value) []string {
	if v.IsZero() {
		return nil
	}
	switch x := v.Interface().(type) {
	case config.Duration:
		if x.Duration%time.Second == 0 {
			return []string{fmt.Sprintf("%ds", x.Duration/time.Second)}
		}
		return []string{x.String()}
	case []string:
		return x
	case bool:
		return []string{fmt.Sprint(x)}
	case string:
		return []string{x}
	}
	panic(fmt.Sprintf("a default of type %s", v.Type()))
}

// TestReadmeNamesEveryManPage: the README's Documentation section names
// every page in man/, as "postern-hosts(1)", and no page that is not
// there.
func TestReadmeNamesEveryManPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, doc, ok := strings.Cut(string(b), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no Documentation section")
	}
	doc, _, _ = strings.Cut(doc, "\n## ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(postern[a-z.-]*)\\(([0-9])\\)`").FindAllStringSubmatch(doc, -1) {
		named[m[1]+"."+m[2]] = true
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "*.[0-9]"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	for _, p := range pages {
		if !named[filepath.Base(p)] {
			t.Errorf("README.md's Documentation section does not name %s", filepath.Base(p))
		}
		delete(named, filepath.Base(p))
	}
	for p := range named {
		t.Errorf("README.md's Documentation section names %s, which man/ does not hold", p)
	}
}

// TestManNamesRunSocket: the pages that name a run's agent socket name it
// where the gateway makes it.
func TestManNamesRunSocket(t *testing.T) {
	want := "Pa " + api.RunSocket("SOCKET", "ID")
	for _, page := range []string{"postern-agent.1", "postern-run.1"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "man", page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not name a run's socket as %q", page, want)
		}
		if regexp.MustCompile(`\.run-ID($|[^/])`).Match(b) {
			t.Errorf("%s names a run's socket as SOCKET.run-ID, the directory that holds it", page)
		}
	}
}

// TestManNamesEveryStateFile: every file of the state directory's table
// (internal/xdg/state.go) is named with its real path in the FILES
// section of some page (.It Pa $XDG_STATE_HOME/postern/NAME), so that a
// person who finds it there can read what it is.
func TestManNamesEveryStateFile(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "internal", "xdg", "state.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			names = append(names, strings.Trim(l.Value, `"`))
		}
		return true
	})
	if len(names) < 10 {
		t.Fatalf("found %d files in internal/xdg/state.go: %q", len(names), names)
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "man", "*.[0-9]"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	var files []byte // the FILES sections
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, sec, ok := strings.Cut(string(b), "\n.Sh FILES\n"); ok {
			sec, _, _ = strings.Cut(sec, "\n.Sh ")
			files = append(files, sec...)
		}
	}
	for _, n := range names {
		if !regexp.MustCompile(`(?m)^\.It Pa \$XDG_STATE_HOME/postern/` + regexp.QuoteMeta(n) + `( |$)`).Match(files) {
			t.Errorf("no man page's FILES section names the state file %s (.It Pa $XDG_STATE_HOME/postern/%s)", n, n)
		}
	}
}
