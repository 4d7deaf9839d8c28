package envlist

import "testing"

func TestGet(t *testing.T) {
	env := []string{"A=1", "AB=2", "A=3", "B=", "C"}
	for k, want := range map[string]string{"A": "3", "AB": "2", "B": "", "C": "", "D": ""} {
		if got := Get(env, k); got != want {
			t.Errorf("Get(%q) = %q, want %q", k, got, want)
		}
	}
}
