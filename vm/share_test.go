package vm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// This file checks the VM's share-local operations the way a secure backend will use them: two
// Machines (party 0 and party 1) run the same program on additive shares, and every backend call
// goes to an ideal functionality (a trusted dealer) that reconstructs its operands, computes the
// result with the cleartext backend and hands out fresh random shares. If the VM mishandled a
// local operation on shares (a constant added by both parties, padding filled at both, ...), the
// revealed result would differ from the cleartext run.

type shareReq struct {
	op     string
	x      ring.Tensor
	y      ring.Tensor // second shared operand (mul)
	w      *ring.Tensor
	ints   [4]int
	nonneg bool
	dst    ring.Tensor
	reply  chan error
}

type dealer struct {
	r     ring.Ring
	clear *cleartext.Backend
	reqs  [2]chan *shareReq
	rng   *rand.Rand
	calls int
}

func newDealer(r ring.Ring) *dealer {
	c, _ := cleartext.New(r)
	return &dealer{r: r, clear: c, reqs: [2]chan *shareReq{make(chan *shareReq), make(chan *shareReq)},
		rng: rand.New(rand.NewPCG(7, 8))}
}

// serve answers paired requests until ctx ends.
func (d *dealer) serve(ctx context.Context) {
	for {
		var a, b *shareReq
		select {
		case a = <-d.reqs[0]:
		case <-ctx.Done():
			return
		}
		select {
		case b = <-d.reqs[1]:
		case <-ctx.Done():
			return
		}
		err := d.answer(a, b)
		a.reply <- err
		b.reply <- err
	}
}

func (d *dealer) answer(a, b *shareReq) error {
	d.calls++
	if a.op != b.op || a.ints != b.ints || len(a.x.Data) != len(b.x.Data) || len(a.dst.Data) != len(b.dst.Data) {
		return fmt.Errorf("parties disagree: %s%v vs %s%v", a.op, a.ints, b.op, b.ints)
	}
	if b.w != nil {
		return fmt.Errorf("party 1 sent weights to %s", b.op)
	}
	x := ring.NewTensor(a.x.Shape)
	d.r.AddVec(x.Data, a.x.Data, b.x.Data)
	res := ring.NewTensor(a.dst.Shape)
	ctx := context.Background()
	var err error
	switch a.op {
	case "input":
		copy(res.Data, x.Data)
	case "reveal":
		to := a.ints[0]
		copy([]*shareReq{a, b}[to].dst.Data, x.Data)
		return nil
	case "matmul":
		err = d.clear.MatMul(ctx, fixed.EngineDefault, res, a.w, a.ints[0], a.ints[1], a.ints[2], x)
	case "mulconst":
		err = d.clear.MulConst(ctx, res, a.w, x)
	case "mul":
		if len(a.y.Data) != len(b.y.Data) {
			return fmt.Errorf("parties disagree on mul's second operand")
		}
		y := ring.NewTensor(a.y.Shape)
		d.r.AddVec(y.Data, a.y.Data, b.y.Data)
		err = d.clear.Mul(ctx, res, x, y)
	case "relu":
		err = d.clear.ReLU(ctx, res, x)
	case "trunc":
		err = d.clear.Trunc(ctx, res, x, a.ints[0], a.nonneg)
		if a.nonneg {
			for _, v := range x.Data {
				if d.r.IsNeg(v) {
					return fmt.Errorf("trunc marked non-negative got a negative input")
				}
			}
		}
	case "div":
		err = d.clear.Div(ctx, res, x, a.ints[0])
	case "maxrows":
		err = d.clear.MaxRows(ctx, res, x, a.ints[0], a.ints[1])
	case "argmaxrows":
		err = d.clear.ArgMaxRows(ctx, res, x, a.ints[0], a.ints[1])
	default:
		return fmt.Errorf("unknown op %s", a.op)
	}
	if err != nil {
		return err
	}
	for i, v := range res.Data {
		s := d.rng.Uint64() & d.r.Mask()
		a.dst.Data[i] = s
		b.dst.Data[i] = d.r.Sub(v, s)
	}
	return nil
}

type shareBackend struct {
	party int
	d     *dealer
}

func (s *shareBackend) Party() int      { return s.party }
func (s *shareBackend) Ring() ring.Ring { return s.d.r }

func (s *shareBackend) call(op string, dst, x ring.Tensor, w *ring.Tensor, nonneg bool, ints ...int) error {
	req := &shareReq{op: op, x: x, w: w, dst: dst, nonneg: nonneg, reply: make(chan error, 1)}
	copy(req.ints[:], ints)
	s.d.reqs[s.party] <- req
	return <-req.reply
}

func (s *shareBackend) Input(_ context.Context, owner int, x ring.Tensor) error {
	in := x.Clone()
	return s.call("input", x, in, nil, false, owner)
}

func (s *shareBackend) Reveal(_ context.Context, to int, x ring.Tensor) (bool, error) {
	in := x.Clone()
	err := s.call("reveal", x, in, nil, false, to)
	return to == s.party, err
}

func (s *shareBackend) MatMul(_ context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	return s.call("matmul", dst, x, w, false, m, k, n)
}

func (s *shareBackend) MulConst(_ context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error {
	return s.call("mulconst", dst, x, w, false)
}

func (s *shareBackend) Mul(_ context.Context, dst, x, y ring.Tensor) error {
	req := &shareReq{op: "mul", x: x, y: y, dst: dst, reply: make(chan error, 1)}
	s.d.reqs[s.party] <- req
	return <-req.reply
}

func (s *shareBackend) ReLU(_ context.Context, dst, x ring.Tensor) error {
	return s.call("relu", dst, x, nil, false)
}

func (s *shareBackend) Trunc(_ context.Context, dst, x ring.Tensor, k int, nonneg bool) error {
	return s.call("trunc", dst, x, nil, nonneg, k)
}

func (s *shareBackend) Div(_ context.Context, dst, x ring.Tensor, d int) error {
	return s.call("div", dst, x, nil, false, d)
}

func (s *shareBackend) MaxRows(_ context.Context, dst, x ring.Tensor, rows, d int) error {
	return s.call("maxrows", dst, x, nil, false, rows, d)
}

func (s *shareBackend) ArgMaxRows(_ context.Context, dst, x ring.Tensor, rows, d int) error {
	return s.call("argmaxrows", dst, x, nil, false, rows, d)
}

// zooProgram uses every opcode, with constants and padding values that only party 0 may add.
func zooProgram(t *testing.T) *fixed.Program {
	rng := rand.New(rand.NewPCG(3, 4))
	b := newBuilder(t, 32, 4)
	x := b.input(ir.Shape{1, 2, 5, 5}, 4)
	cw := b.weight(ir.Shape{4, 1, 3, 3}, 4, randInts(rng, 36, -16, 16)...)
	c := b.op(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: cw, Group: 2, Win: win([]int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, false)})
	bias := b.weight(ir.Shape{4, 1, 1}, 8, randInts(rng, 4, -300, 300)...)
	c = b.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{c}, Weight: bias})
	mp := b.op(&fixed.Instr{Op: fixed.OpMaxPool, In: []int{c}, Win: win([]int{2, 2}, []int{2, 2}, []int{1, 1, 0, 0}, []int{1, 1}, false)})
	r := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{mp}})
	tr := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{r}, Shift: 4, NonNeg: true})
	pd := b.op(&fixed.Instr{Op: fixed.OpPad, In: []int{tr}, Pads: []int{0, 0, 1, 0, 0, 0, 0, 1}, PadMode: fixed.PadConstant, PadValue: -5})
	sp := b.op(&fixed.Instr{Op: fixed.OpSumPool, In: []int{pd}, Win: win([]int{2, 2}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}, false)})
	dv := b.op(&fixed.Instr{Op: fixed.OpDiv, In: []int{sp}, Divisors: []int{3, 4, 4}})
	return b.finishZoo(t, rng, dv)
}

func (b *builder) finishZoo(t *testing.T, rng *rand.Rand, dv int) *fixed.Program {
	n := b.p.Tensors[dv].Shape.Size()
	flat := b.op(&fixed.Instr{Op: fixed.OpReshape, In: []int{dv}}, ir.Shape{n, 1})
	mw := b.weight(ir.Shape{6, n}, 4, randInts(rng, 6*n, -16, 16)...)
	mm := b.op(&fixed.Instr{Op: fixed.OpMatMul, In: []int{flat}, Weight: mw})
	mt := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{mm}, Shift: 4})
	row := b.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{mt}, Perm: []int{1, 0}})
	sc := b.weight(ir.Shape{6}, 4, randInts(rng, 6, -32, 32)...)
	mc := b.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{row}, Weight: sc})
	up := b.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{row}, Shift: 4})
	sum := b.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{mc, up}})
	diff := b.op(&fixed.Instr{Op: fixed.OpSub, In: []int{sum, up}})
	cat := b.op(&fixed.Instr{Op: fixed.OpConcat, In: []int{sum, diff}, Axis: 1})
	am := b.op(&fixed.Instr{Op: fixed.OpArgMax, In: []int{cat}, Axis: 1}, ir.Shape{1})
	// A product of two shared tensors, both operands broadcast ([6,1] by [1,6]).
	outer := b.op(&fixed.Instr{Op: fixed.OpMul, In: []int{mt, row}})
	outerT := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{outer}, Shift: 4})
	b.output(cat)
	b.output(am)
	b.output(outerT)
	if err := b.p.Validate(); err != nil {
		t.Fatal(err)
	}
	return b.p
}

func TestTwoPartySharesMatchClear(t *testing.T) {
	p := zooProgram(t)
	r := ring.Must(p.Bits)
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 5; trial++ {
		xin := randInts(rng, 50, -100, 100)
		want := runClear(t, p, xin)

		d := newDealer(r)
		ctx, cancel := context.WithCancel(context.Background())
		go d.serve(ctx)
		var outs [2][]Output
		var errs [2]error
		var wg sync.WaitGroup
		for party := 0; party < 2; party++ {
			prog := p
			var in ring.Tensor
			if party == 1 {
				prog = p.StripWeights() // the client holds no weights
				in = r.SignedTensor(p.Tensors[p.Inputs[0].Tensor].Shape, xin...)
			}
			m, err := New(prog, &shareBackend{party: party, d: d})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func(party int) {
				defer wg.Done()
				outs[party], errs[party] = m.Run(ctx, []ring.Tensor{in})
			}(party)
		}
		wg.Wait()
		cancel()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("run: %v / %v", errs[0], errs[1])
		}
		for i, o := range outs[1] {
			if !o.Revealed {
				t.Fatalf("output %d not revealed to the client", i)
			}
			if got := r.SignedValues(o.Value); !slices.Equal(got, want[i]) {
				t.Errorf("trial %d output %d: two-party %v, clear %v", trial, i, got, want[i])
			}
		}
		for i, o := range outs[0] {
			if o.Revealed {
				t.Errorf("output %d revealed to the server", i)
			}
		}
	}
}
