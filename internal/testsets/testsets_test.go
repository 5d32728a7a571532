package testsets

import (
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

func TestSharedSets(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	m := MNIST(t, shared, 0, 3, true)
	// The first t10k labels are 7 2 1; unit scaling keeps pixels in [0, 1].
	for i, want := range []int{7, 2, 1} {
		if m[i].Label != want || len(m[i].Input) != 784 || m[i].Name != "t10k-"+string(rune('0'+i)) {
			t.Fatalf("MNIST sample %d: %q label %d, %d values", i, m[i].Name, m[i].Label, len(m[i].Input))
		}
		for _, v := range m[i].Input {
			if v < 0 || v > 1 {
				t.Fatalf("MNIST sample %d: value %g outside [0,1]", i, v)
			}
		}
	}
	c := CIFAROval(t, shared, 4)
	// The CIFAR-10 test set starts 3 8 8 0.
	for i, want := range []int{3, 8, 8, 0} {
		if c[i].Label != want || len(c[i].Input) != 3072 {
			t.Fatalf("CIFAR sample %d: label %d, %d values", i, c[i].Label, len(c[i].Input))
		}
	}
}
