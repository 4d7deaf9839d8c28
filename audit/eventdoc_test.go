package audit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// postern-audit(1) names every event type and every reason the log
// holds, so that no word postern audit show prints is one its manual does
// not explain.
func TestManPageNamesEveryEventTypeAndReason(t *testing.T) {
	words, _ := vocabulary(t)
	if len(words["EventType"]) < 30 || len(words["Reason"]) < 30 {
		t.Fatalf("found %d event types and %d reasons in vocabulary.go; the parse missed them", len(words["EventType"]), len(words["Reason"]))
	}
	page, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	for kind, list := range words {
		for _, w := range list {
			if !regexp.MustCompile(`Li ` + regexp.QuoteMeta(w) + `(\s|$)`).Match(page) {
				t.Errorf("postern-audit(1) does not name the %s %q", kind, w)
			}
		}
	}
}

// postern-audit(1) names, where it says why the vault epoch moved
// (vault_locked, vault_unlocked), every reason the gateway gives such a
// change: each audit.Reason its vault state passes to bump or lockLocked
// (gateway/vaultstate.go, vaultfile.go).
func TestManNamesEveryEpochChangeReason(t *testing.T) {
	_, words := vocabulary(t)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "gateway", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (fn.Sel.Name != "bump" && fn.Sel.Name != "lockLocked") || len(call.Args) == 0 {
				return true
			}
			arg, ok := call.Args[len(call.Args)-1].(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := arg.X.(*ast.Ident); ok && pkg.Name == "audit" {
				used[arg.Sel.Name] = fset.Position(call.Pos()).String()
			}
			return true
		})
	}
	if len(used) < 5 {
		t.Fatalf("found %d epoch change reasons passed to bump and lockLocked; the scan missed them", len(used))
	}
	b, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	// The paragraph that says why the epoch moved, up to the next macro
	// that ends it.
	page := string(b)
	i := strings.Index(page, "The vault epoch moved")
	if i < 0 {
		t.Fatal(`postern-audit(1) has no paragraph "The vault epoch moved"`)
	}
	para := page[i:]
	for _, end := range []string{"\n.Pp", "\n.Ss", "\n.Sh"} {
		if j := strings.Index(para, end); j >= 0 {
			para = para[:j]
		}
	}
	lines := strings.Split(para, "\n")
	for name, where := range used {
		w, ok := words[name]
		if !ok {
			t.Errorf("%s passes audit.%s, which vocabulary.go does not declare as a Reason", where, name)
			continue
		}
		if !slices.ContainsFunc(lines, func(l string) bool {
			return l == ".Li "+w || strings.HasPrefix(l, ".Li "+w+" ")
		}) {
			t.Errorf("postern-audit(1) does not name %q (audit.%s, %s) among the reasons the vault epoch moves for:\n%s", w, name, where, para)
		}
	}
}

// vocabulary returns the words vocabulary.go declares as literals, by
// type (EventType, Reason), and each constant's word by its name.
func vocabulary(t *testing.T) (byType map[string][]string, byName map[string]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "vocabulary.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	byType, byName = map[string][]string{}, map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			id, ok := v.Type.(*ast.Ident)
			if !ok || (id.Name != "EventType" && id.Name != "Reason") {
				continue
			}
			for k, val := range v.Values {
				// A reason made of others (REAUTH_REQUIRED and what
				// changed) is no literal, and is named by its parts.
				if lit, ok := val.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					byType[id.Name] = append(byType[id.Name], s)
					byName[v.Names[k].Name] = s
				}
			}
		}
	}
	return byType, byName
}
