package vault

import (
	"strings"
	"testing"
	"time"
)

func TestParamsValidate(t *testing.T) {
	f := FloorParams()
	if f != (Params{Time: 3, Memory: 64 << 10, Threads: 4}) {
		t.Fatalf("floor %v", f)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Params{
		{}, {2, 64 << 10, 4}, {3, 64<<10 - 1, 4}, {3, 64 << 10, 3},
	} {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "below the floor") {
			t.Errorf("%v: %v", p, err)
		}
	}
	for _, p := range []Params{
		{33, 64 << 10, 4}, {3, 1<<20 + 1, 4}, {3, 64 << 10, 65},
	} {
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "exceed") {
			t.Errorf("%v: %v", p, err)
		}
	}
	if s := f.String(); s != "argon2id t=3 m=64MiB p=4" {
		t.Errorf("String = %q", s)
	}
}

// fakeMeasure models a machine where the floor takes 250ms and the cost
// grows linearly with memory and passes.
func fakeMeasure(t *testing.T) *int {
	calls := new(int)
	old := measureKDF
	measureKDF = func(p Params) time.Duration {
		*calls++
		return time.Duration(float64(250*time.Millisecond) * float64(p.Memory) / (64 << 10) * float64(p.Time) / 3)
	}
	t.Cleanup(func() { measureKDF = old })
	return calls
}

func TestCalibrate(t *testing.T) {
	calls := fakeMeasure(t)
	if p := Calibrate(0); p != FloorParams() || *calls != 0 {
		t.Fatalf("Calibrate(0) = %v after %d measurements", p, *calls)
	}
	if p := Calibrate(-time.Second); p != FloorParams() {
		t.Fatalf("Calibrate(<0) = %v", p)
	}
	if p := Calibrate(time.Millisecond); p != FloorParams() {
		t.Fatalf("Calibrate(1ms) = %v", p)
	}
	if p := Calibrate(time.Second); p != (Params{Time: 3, Memory: 256 << 10, Threads: 4}) {
		t.Fatalf("Calibrate(1s) = %v", p)
	}
	if p := Calibrate(700 * time.Millisecond); p.Memory != 179<<10 || p.Time != 3 {
		t.Fatalf("Calibrate(700ms) = %v", p) // rounded down to whole MiB
	}
	// Memory stops at 1 GiB (4s here), then passes go up.
	if p := Calibrate(10 * time.Second); p != (Params{Time: 7, Memory: 1 << 20, Threads: 4}) {
		t.Fatalf("Calibrate(10s) = %v", p)
	}
	if p := Calibrate(time.Hour); p != (Params{Time: 32, Memory: 1 << 20, Threads: 4}) {
		t.Fatalf("Calibrate(1h) = %v", p)
	}
	for _, d := range []time.Duration{time.Nanosecond, time.Second, time.Minute, time.Hour} {
		if err := Calibrate(d).Validate(); err != nil {
			t.Errorf("Calibrate(%v): %v", d, err)
		}
	}
}

// TestCalibrateReal runs one real derivation: any machine derives the
// floor in more than a microsecond, so the floor comes back.
func TestCalibrateReal(t *testing.T) {
	if p := Calibrate(time.Microsecond); p != FloorParams() {
		t.Fatalf("Calibrate(1µs) = %v", p)
	}
}
