package ir

import (
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	g := convGraph([]int{1, 1, 1, 1}, 2, Shape{6, 2, 3, 3})
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(g)
	if err != nil {
		t.Fatal(err)
	}
	// Conv output [1,6,4,4] = 96 elements, each 2*3*3 = 18 MACs.
	if s.MACs != 96*18 || s.ReluElements != 96 || s.Params != 6*2*3*3 || s.OpCounts[Conv] != 1 {
		t.Fatalf("got %+v", s)
	}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "MACs") || !strings.Contains(b.String(), "Conv×1") {
		t.Fatalf("table:\n%s", b.String())
	}
}
