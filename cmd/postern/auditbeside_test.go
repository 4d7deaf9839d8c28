package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postern/postern/audit"
	"github.com/postern/postern/gateway/api"
)

// A program of the user that replaces the log replaces the pin and the
// anchor beside it as well: verify cannot tell, and says so among what it
// cannot prove, rather than counting those files as proof that the log is
// the original and that nothing was cut from its end.
func TestVerifyDoesNotCountFilesBesideTheLogAsProof(t *testing.T) {
	newLog := func(dir string) (string, *audit.Report) {
		path := filepath.Join(dir, "audit.log")
		s, err := audit.NewSetup(dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := audit.Open(s.Config(path))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(audit.Event{Type: audit.EventSign, Run: "R1"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := audit.VerifyPath(path, audit.VerifyOptions{})
		if err != nil || !r.OK {
			t.Fatalf("%+v, %v", r, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "audit.anchor"), []byte(api.FormatAnchor(*r.Head)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path, r
	}
	orig, _ := newLog(t.TempDir())
	// Another log, with a pin and an anchor of its own, moved in place of
	// the original one with them.
	other, _ := newLog(t.TempDir())
	for _, name := range []string{"audit.log", "audit.pin", "audit.anchor"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(other), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(orig), name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out, errw strings.Builder
	if err := auditVerify([]string{"--json", orig}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	var v struct {
		OK          bool     `json:"ok"`
		CannotProve []string `json:"cannot_prove"`
	}
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(v.CannotProve, "\n")
	if !strings.Contains(all, "that this is the original log") {
		t.Errorf("a log verified with the pin beside it, which was replaced with it, is not among what verify cannot prove:\n%s", all)
	}
	if !strings.Contains(all, "that nothing was cut from the end") || strings.Contains(all, "after the last anchor") {
		t.Errorf("a log verified with the anchor beside it, which was replaced with it, is said to be whole up to that anchor:\n%s", all)
	}
	out.Reset()
	if err := auditVerify([]string{orig}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "cannot prove: that this is the original log") {
		t.Errorf("the text report does not say it:\n%s", out.String())
	}
}
