package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/vm"
)

func TestClassRows(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		rows, d int
	}{
		{[]int{1, 1000, 1, 1}, 1, 1000}, // SqueezeNet's classifier output
		{[]int{1, 10}, 1, 10},
		{[]int{10}, 1, 10},
		{[]int{2, 10}, 2, 10},
		{[]int{2, 10, 1, 1}, 2, 10},
		{[]int{1, 1}, 1, 1},
		{[]int{}, 1, 1},
		{[]int{3, 4, 5}, 12, 5},
	} {
		n := ring.Size(c.shape)
		if rows, d := classRows(c.shape, n); rows != c.rows || d != c.d {
			t.Errorf("%v: %d rows of %d, want %d of %d", c.shape, rows, d, c.rows, c.d)
		}
	}
}

func TestPrintTopSqueezeNetShape(t *testing.T) {
	r := ring.Must(32)
	x := ring.NewTensor([]int{1, 1000, 1, 1})
	x.Data[417] = r.FromSigned(5 << 8)
	var b bytes.Buffer
	printTop(&b, r, vm.Output{Name: "prob", Value: x, Scale: 8}, 5, nil)
	out := b.String()
	if n := strings.Count(out, "top class"); n != 1 {
		t.Fatalf("%d 'top class' lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "top class 417 (5)") || !strings.Contains(out, "top 5: 417 5") {
		t.Errorf("output:\n%s", out)
	}
}
