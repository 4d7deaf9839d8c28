package confine

import (
	"slices"
	"testing"
)

func TestSession(t *testing.T) {
	var s Spec
	s.Session([]string{"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/1000", "TMUX_TMPDIR=/var/tmux",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/var/bus/socket,guid=1;unix:abstract=/tmp/dbus-x", "SCREENDIR=relative"})
	for _, want := range []string{"/run/user/1000", "/var/tmux", "/var/bus/socket", "/run/screen", "/home/u/.screen", "/home/u/.ssh"} {
		if !slices.Contains(s.Hide, want) {
			t.Errorf("%s not hidden: %q", want, s.Hide)
		}
	}
	if slices.Contains(s.Hide, "relative") {
		t.Errorf("a relative path was hidden: %q", s.Hide)
	}
	for _, want := range []string{"/home/u/.ssh/known_hosts", "/home/u/.ssh/config"} {
		if !slices.Contains(s.ReadOnly, want) {
			t.Errorf("%s not read-only: %q", want, s.ReadOnly)
		}
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{
		{}:                              "unconfined",
		{Namespaces: true}:              "confined: namespaces, no Landlock",
		{Namespaces: true, Landlock: 7}: "confined: namespaces, Landlock ABI 7",
	} {
		if l.String() != want {
			t.Errorf("%+v: %q, want %q", l, l, want)
		}
	}
}
