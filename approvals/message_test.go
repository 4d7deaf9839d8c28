package approvals

import (
	"slices"
	"testing"
)

// Of a git commit or tag a card shows who made it and its subject; of
// anything else its first lines that are not empty.
func TestMessageHead(t *testing.T) {
	for _, tt := range []struct{ msg, want []string }{
		{[]string{"tree 9a31", "parent 5074", "author A <a@x> 1 +0000", "committer C <c@x> 1 +0000", "", "", "fix the parser", "", "body"},
			[]string{"author A <a@x> 1 +0000", "fix the parser"}},
		{[]string{"object 9a31", "type commit", "tag v1", "tagger T <t@x> 1 +0000", "", "release 1"},
			[]string{"tagger T <t@x> 1 +0000", "release 1"}},
		{[]string{"", "one", "  ", "two", "three", "four"}, []string{"one", "two", "three"}},
		// A commit object the requester wrote itself, its header full of
		// author lines, shows its first and its subject, as a real one.
		{append(append([]string{"tree 9a31"}, slices.Repeat([]string{"author A <a@x> 1 +0000"}, 5000)...), "", "subject"),
			[]string{"author A <a@x> 1 +0000", "subject"}},
	} {
		var b []byte
		for _, l := range tt.msg {
			b = append(b, l+"\n"...)
		}
		if got := MessageHead(b, 1024); !slices.Equal(got, tt.want) {
			t.Errorf("MessageHead(%q) = %q, want %q", b, got, tt.want)
		}
	}
}
