package ir

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// Summary is the cost and size profile of a graph, as `athosc inspect` prints it.
type Summary struct {
	OpCounts       map[Op]int
	Params         int // elements of all constants
	MACs           int64
	ReluElements   int64 // elements that pass through Relu (the non-linear cost driver)
	Activations    int64 // elements of all node outputs
	LargestValue   string
	LargestElems   int
	InputElements  int
	OutputElements int
}

// Summarize computes g's summary. g must have its shapes inferred.
func Summarize(g *Graph) (Summary, error) {
	s := Summary{OpCounts: map[Op]int{}}
	for _, c := range g.Consts {
		s.Params += len(c.Data)
	}
	for _, in := range g.Inputs {
		s.InputElements += in.Shape.Size()
	}
	for _, o := range g.Outputs {
		sh, ok := g.ShapeOf(o)
		if !ok {
			return s, fmt.Errorf("output %q has no shape: run shape inference first", o)
		}
		s.OutputElements += sh.Size()
	}
	for _, n := range g.Nodes {
		s.OpCounts[n.Op]++
		if len(n.Outputs) != 1 {
			return s, fmt.Errorf("%s: has %d outputs", n, len(n.Outputs))
		}
		out, ok := g.ShapeOf(n.Outputs[0])
		if !ok {
			return s, fmt.Errorf("%s: output has no shape: run shape inference first", n)
		}
		size := out.Size()
		s.Activations += int64(size)
		if size > s.LargestElems {
			s.LargestElems, s.LargestValue = size, n.Outputs[0]
		}
		switch n.Op {
		case Relu:
			s.ReluElements += int64(size)
		case Conv:
			w, _ := g.ShapeOf(n.Inputs[1])
			s.MACs += int64(size) * int64(Shape(w[1:]).Size())
		case Gemm, MatMul:
			a, _ := g.ShapeOf(n.Inputs[0])
			k := a[len(a)-1]
			if n.Op == Gemm {
				if t, _ := n.Attrs.Int("transA"); t != 0 {
					k = a[0]
				}
			}
			s.MACs += int64(size) * int64(k)
		}
	}
	return s, nil
}

// Write prints the summary as an aligned table.
func (s Summary) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ops := make([]Op, 0, len(s.OpCounts))
	for op := range s.OpCounts {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if s.OpCounts[ops[i]] != s.OpCounts[ops[j]] {
			return s.OpCounts[ops[i]] > s.OpCounts[ops[j]]
		}
		return ops[i] < ops[j]
	})
	fmt.Fprintf(tw, "operators\t")
	for i, op := range ops {
		if i > 0 {
			fmt.Fprint(tw, ", ")
		}
		fmt.Fprintf(tw, "%s×%d", op, s.OpCounts[op])
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "parameters\t%s\n", count(int64(s.Params)))
	fmt.Fprintf(tw, "MACs\t%s\n", count(s.MACs))
	fmt.Fprintf(tw, "ReLU elements\t%s\n", count(s.ReluElements))
	fmt.Fprintf(tw, "activation elements\t%s (largest: %q, %s)\n", count(s.Activations), s.LargestValue, count(int64(s.LargestElems)))
	fmt.Fprintf(tw, "input / output elements\t%s / %s\n", count(int64(s.InputElements)), count(int64(s.OutputElements)))
	return tw.Flush()
}

func count(n int64) string {
	switch {
	case n >= 10_000_000_000:
		return fmt.Sprintf("%d (%.1f G)", n, float64(n)/1e9)
	case n >= 10_000_000:
		return fmt.Sprintf("%d (%.1f M)", n, float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%d (%.1f k)", n, float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
