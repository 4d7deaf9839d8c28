package sshagent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// postern-agent(1) lists every protocol message, key constraint and
// extension the agent knows, with its number: every msg… and constrain…
// constant of the package, and every Ext… name, appears there.
func TestManPageListsTheProtocol(t *testing.T) {
	page, err := os.ReadFile("../man/postern-agent.1")
	if err != nil {
		t.Fatal(err)
	}
	man := string(page)
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range pkgs["sshagent"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						continue
					}
					switch n := name.Name; {
					case strings.HasPrefix(n, "msg") || strings.HasPrefix(n, "constrain"):
						seen++
						if !regexp.MustCompile(`Pq ` + lit.Value + `\b`).MatchString(man) {
							t.Errorf("postern-agent(1) does not list %s (%s)", n, lit.Value)
						}
					case strings.HasPrefix(n, "Ext") && lit.Kind == token.STRING:
						seen++
						v, _ := strconv.Unquote(lit.Value)
						if !strings.Contains(man, "Dq "+v) {
							t.Errorf("postern-agent(1) does not list the extension %s (%q)", n, v)
						}
					}
				}
			}
		}
	}
	if seen < 25 {
		t.Fatalf("found only %d protocol constants: the test no longer reads them", seen)
	}
}
