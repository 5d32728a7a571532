package interp

import (
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// requant evaluates ir.Requant on integer-valued float32 inputs, in int64 (exact as long as the
// inputs are integers below 2^24 in magnitude, which float32 holds exactly).
func requant(a ir.Attrs, in []*slot, out *slot) (func(), error) {
	p, err := ir.ReadRequant(a, len(in), in[0].shape)
	if err != nil {
		return nil, err
	}
	shape := in[0].shape
	return func() {
		x := make([]int64, len(in))
		for i := range out.data {
			for j, s := range in {
				x[j] = int64(math.Round(float64(s.data[i])))
			}
			out.data[i] = float32(p.Apply(x, p.Channel(shape, i)))
		}
	}, nil
}
