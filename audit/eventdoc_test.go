package audit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// postern-audit(1) names every event type and every reason the log
// holds, so that no word postern audit show prints is one its manual does
// not explain.
func TestManPageNamesEveryEventTypeAndReason(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "vocabulary.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	words := map[string][]string{}
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
			for _, val := range v.Values {
				// A reason made of others (REAUTH_REQUIRED and what
				// changed) is no literal, and is named by its parts.
				if lit, ok := val.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					words[id.Name] = append(words[id.Name], s)
				}
			}
		}
	}
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
