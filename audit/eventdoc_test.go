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

// postern-audit(1) names every event type the log holds, so that no
// event postern audit show prints is one its manual does not explain.
func TestManPageNamesEveryEventType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "vocabulary.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "EventType" {
				continue
			}
			for _, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					types = append(types, s)
				}
			}
		}
	}
	if len(types) < 30 {
		t.Fatalf("found %d event types in vocabulary.go; the parse missed them", len(types))
	}
	page, err := os.ReadFile(filepath.Join("..", "man", "postern-audit.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range types {
		if !regexp.MustCompile(`(?m)^\.Li ` + regexp.QuoteMeta(typ) + `\b`).Match(page) {
			t.Errorf("postern-audit(1) does not name the event type %s", typ)
		}
	}
}
