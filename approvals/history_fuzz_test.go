package approvals

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postern/postern/audit"
)

// FuzzDecodePast holds decodePast, which keeps the last MaxRuns runs to
// serve again and the last maxPast other entries as it reads, to
// json.Unmarshal of the whole array so cut (lastOfEach).
func FuzzDecodePast(f *testing.F) {
	at := time.Date(2026, 11, 30, 14, 23, 6, 0, time.UTC)
	var many []Past
	for i := range maxPast + 3 {
		many = append(many, Past{BootID: "B1", Run: "R" + string(rune('a'+i%26)), PID: i, Reason: audit.ReasonSession, Ended: at, DestNames: []string{"db-1"}})
	}
	for _, ps := range [][]Past{nil, {}, many[:2], many} {
		b, err := json.Marshal(ps)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	runs := slices.Clone(many)
	for i := range runs {
		if i%3 == 0 {
			runs[i].Socket = "/s"
		}
	}
	b, _ := json.Marshal(slices.Repeat(runs, 12))
	f.Add(b)
	for _, s := range []string{"", "null", "{}", "[{}] x", "[{},]", "[{} {}]", "[{\"pid\":\"x\"},{}]", " [ ] \n", "[null,{\"pid\":1,\"pid\":2}]", "[[]]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodePast(b)
		var want []Past
		werr := json.Unmarshal(b, &want)
		want = lastOfEach(want)
		if (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: decodePast gives %d entries, %v; json.Unmarshal %d, %v", b, len(got), err, len(want), werr)
		}
	})
}

// lastOfEach is what the display context keeps of ps, found the plain
// way: the last MaxRuns entries with a socket and the last maxPast
// without, in their order.
func lastOfEach(ps []Past) []Past {
	var withSocket, without []int
	for i, p := range ps {
		if p.Socket != "" {
			withSocket = append(withSocket, i)
		} else {
			without = append(without, i)
		}
	}
	keep := map[int]bool{}
	for _, i := range withSocket[max(0, len(withSocket)-MaxRuns):] {
		keep[i] = true
	}
	for _, i := range without[max(0, len(without)-maxPast):] {
		keep[i] = true
	}
	var out []Past
	if ps != nil {
		out = []Past{}
	}
	for i, p := range ps {
		if keep[i] {
			out = append(out, p)
		}
	}
	return out
}

// A display context file as large as loadPast reads, holding millions
// of empty entries, is read in memory that does not grow with them.
func TestLoadPastBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "context.json")
	n := (maxPastFile - 2) / 3
	if err := os.WriteFile(p, []byte("["+strings.Repeat("{},", n-1)+"{}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ps, err := loadPast(p)
	runtime.ReadMemStats(&after)
	if err != nil || len(ps) != maxPast {
		t.Fatalf("%d entries, %v", len(ps), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8*maxPastFile {
		t.Fatalf("reading a %d-byte file of %d entries took %d MB", maxPastFile, n, grew>>20)
	}
}
