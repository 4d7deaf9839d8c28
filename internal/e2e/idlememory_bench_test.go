package e2e

import (
	"testing"
	"time"
)

// BenchmarkIdleMemory reports each agent's resident memory after it has
// loaded its keys and signed once, at rest, and what it is made of: the
// process's own memory (anon-MiB) and the pages of the files it maps, its
// executable and libraries (file-MiB). A kernel whose page cache holds
// large folios (ext4 since Linux 6.x) maps a whole folio at a fault, so an
// executable's code and read-only data count in full, and a few kilobytes
// more of them can move the total by half a MiB.
func BenchmarkIdleMemory(b *testing.B) {
	agents := startBenchAgents(b)
	for _, a := range agents {
		cl, c := dialAgent(b, a.sock)
		cl.SignWithFlags(a.keys["ed25519"], []byte("x"), 0)
		c.Close()
	}
	time.Sleep(500 * time.Millisecond)
	for _, a := range agents {
		b.Run("agent="+a.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rss(b, a.pid)
			}
			b.ReportMetric(float64(rss(b, a.pid))/1024, "RSS-MiB")
			b.ReportMetric(float64(statusKB(b, a.pid, "RssAnon:"))/1024, "anon-MiB")
			b.ReportMetric(float64(statusKB(b, a.pid, "RssFile:"))/1024, "file-MiB")
		})
	}
}
