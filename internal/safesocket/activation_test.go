package safesocket

import (
	"strings"
	"testing"
)

func TestPickListenFD(t *testing.T) {
	tests := []struct {
		fds, pid, names string
		n, use          int
		err             string
	}{
		{"1", "42", "", 1, 0, ""},
		{"1", "42", "postern.socket", 1, 0, ""}, // the unit's default name
		{"2", "42", "ctl:agent", 2, 1, ""},
		{"2", "42", "a:b", 0, 0, `none named "agent"`},
		{"2", "42", "", 0, 0, "none named"},
		{"1", "41", "agent", 0, 0, ""}, // for another process
		{"1", "", "agent", 0, 0, ""},
		{"0", "42", "", 0, 0, "LISTEN_FDS"},
		{"x", "42", "", 0, 0, "LISTEN_FDS"},
		{"65", "42", "", 0, 0, "LISTEN_FDS"},
		{"1", "42", "x:agent", 1, 0, ""}, // a name past LISTEN_FDS does not count
	}
	for _, tt := range tests {
		n, use, err := pickListenFD(tt.fds, tt.pid, tt.names, 42, "agent")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%+v: err %v, want %q", tt, err, tt.err)
			}
			continue
		}
		if err != nil || n != tt.n || use != tt.use {
			t.Errorf("%+v: got %d %d %v", tt, n, use, err)
		}
	}
}
