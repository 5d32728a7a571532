package onnx

import (
	"errors"
	"testing"
)

// TestFit1DMatchesORT: when fit1D finds a rule, it equals ONNX Runtime's float32 requantisation
// on every accumulator of the range (checked exhaustively here, not only at the steps).
func TestFit1DMatchesORT(t *testing.T) {
	found := 0
	for _, m := range []float32{0.5, 0.0625, 0.013, 0.0026984415, 0.1, 0.37} {
		const bound = 40000
		f := func(acc int64) int { return ortRequant(acc, m, 128, 0, 255) }
		r, err := fit1D(-bound, bound, f, float64(m), 0, 255, shiftFor(float64(m), bound))
		if errors.Is(err, ErrUnsupported) {
			t.Logf("m = %g: %v", m, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		found++
		for acc := int64(-bound); acc <= bound; acc++ {
			if got, want := r.apply([]int64{acc}, 0, 255), f(acc); got != want {
				t.Fatalf("m = %g, acc %d: rule %d, ORT %d", m, acc, got, want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no multiplier had a rule")
	}
}

// TestFitAddMatchesORT checks the QLinearAdd rule on all 65,536 input pairs.
func TestFitAddMatchesORT(t *testing.T) {
	q := newORTQLinearAdd(0.05, 120, 0.04, 130, 0.07, 125, 0, 255)
	r, err := fitAdd(q, 0, 255)
	if err != nil {
		t.Skipf("no rule: %v", err)
	}
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b++ {
			if got, want := r.apply([]int64{int64(a), int64(b)}, 0, 255), q.at(a, b); got != want {
				t.Fatalf("(%d, %d): rule %d, ORT %d", a, b, got, want)
			}
		}
	}
}
