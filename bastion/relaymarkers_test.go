package bastion

import (
	"testing"

	"github.com/postern/postern/bastion/marker"
)

// With markers on for the host, the host receives the wrapper, not the
// command, and the journal says so.
func TestRelayWrapsForMarkers(t *testing.T) {
	w := newWorldWith(t, func(c *Config) { c.Markers = []string{"127.0.0.*"} }, nil)
	w.host.set(func(h *testHost) { h.handle = func(s *hostSession) { s.exit(0) } })
	if _, _, err := w.run("uptime", nil); err != nil {
		t.Fatal(err)
	}
	e := w.only()
	want, err := marker.Wrap(e.ID, []byte("uptime"))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.host.seen()[0].Command; got != want || !e.Marker || string(e.Command) != "uptime" {
		t.Fatalf("the host got %q; marker %v", got, e.Marker)
	}
}

// Marker globs match the host whatever its case, as ssh_config's Host
// patterns do: ssh hands postern connect the name in lower case, and a
// glob written "Prod-*" must still wrap prod-db-1's commands.
func TestMarkerGlobsIgnoreCase(t *testing.T) {
	s := &Server{cfg: Config{Markers: []string{"Prod-*", "db-[A-C]"}}}
	for _, host := range []string{"prod-db-1", "PROD-DB-1", "db-b"} {
		if !s.markersFor(host) {
			t.Errorf("markers = [\"Prod-*\", \"db-[A-C]\"] does not wrap the commands of %s", host)
		}
	}
	if s.markersFor("staging-1") {
		t.Error("markers wrap a host no glob names")
	}
}
