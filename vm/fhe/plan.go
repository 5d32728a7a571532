// Package fhe is the fhe mode's executor (athosc --backend fhe): it evaluates a fixed-point
// program over Z_n (n the CRT product of the plaintext primes) on BGV ciphertexts with the
// evaluator of protocols/fhe. It does not implement vm.Backend: a non-interactive evaluation
// changes the data's representation between layers (LoLa), so it walks the program itself. The
// linear instructions are composed, with the Machine's own gather tables (vm.PlanIndex), into one
// affine map of the ciphertexts they read, applied by the diagonal method only where a square (a
// product of two runtime tensors) or an output needs the value; the results are bitwise the
// cleartext run's (vm/cleartext over Z_n).
package fhe

import (
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
)

// Layout is the public shape of an fhe evaluation that both parties derive from the program (the
// client from its copy without weights): the BGV parameters, the slot period every vector is
// replicated with, the giant step of the linear maps, the rotations the evaluation keys must
// cover, and the sizes of the inputs and outputs.
type Layout struct {
	Params    *fheproto.Params
	Period    int   // power of two >= every tensor's size, <= N/2
	G         int   // giant step: rotations are by 1 and by G
	Rotations []int // exactly the rotations the plan uses
	In, Out   []int // element counts of the inputs and outputs
}

// NewLayout derives the layout of program p, which must carry fhe parameters.
func NewLayout(p *fixed.Program) (*Layout, error) {
	f := p.FHE
	if f == nil || p.Modulus == 0 {
		return nil, fmt.Errorf("fhe: the program was not compiled for the fhe mode (athosc --backend fhe)")
	}
	if _, err := p.FHEDepth(); err != nil {
		return nil, fmt.Errorf("fhe: %w", err)
	}
	prm, err := fheproto.NewParams(f.LogN, f.T, f.LogQ, f.LogP, f.OutLevel)
	if err != nil {
		return nil, err
	}
	if prm.Modulus() != p.Modulus {
		return nil, fmt.Errorf("fhe: the plaintext primes multiply to %d, the program is over Z_%d", prm.Modulus(), p.Modulus)
	}
	l := &Layout{Params: prm}
	biggest, name := 1, ""
	for _, t := range p.Tensors {
		if n := t.Shape.Size(); n > biggest {
			biggest, name = n, t.Name
		}
	}
	if biggest > prm.Slots() {
		return nil, fmt.Errorf("fhe: tensor %s has %d elements, more than the %d slots of one ciphertext row (N/2); packing a tensor into several ciphertexts is not implemented", name, biggest, prm.Slots())
	}
	l.Period = 1 << uint(bits.Len(uint(biggest-1)))
	l.G = 1 << uint((bits.Len(uint(l.Period))-1+1)/2) // about sqrt(period), a power of two
	if l.G > l.Period {
		l.G = l.Period
	}
	if needsRotations(p) && l.Period > 1 {
		l.Rotations = []int{1}
		if l.G > 1 && l.G < l.Period {
			l.Rotations = append(l.Rotations, l.G)
		}
	}
	for _, io := range p.Inputs {
		l.In = append(l.In, p.Tensors[io.Tensor].Shape.Size())
	}
	for _, io := range p.Outputs {
		l.Out = append(l.Out, p.Tensors[io.Tensor].Shape.Size())
	}
	return l, nil
}

// needsRotations reports whether any instruction makes a linear map that is not a scaled identity
// (the rule of fixed.Program.FHEDepth).
func needsRotations(p *fixed.Program) bool {
	for _, in := range p.Instrs {
		switch in.Op {
		case fixed.OpInput, fixed.OpOutput, fixed.OpMul, fixed.OpReshape, fixed.OpScaleUp, fixed.OpAddConst:
		case fixed.OpAdd, fixed.OpSub:
			if !p.Tensors[in.In[0]].Shape.Equal(p.Tensors[in.In[1]].Shape) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// galoisElement is the Galois element of a column rotation by k in the layout's ring.
func galoisElement(l *Layout, k int) uint64 { return l.Params.GaloisElement(k) }
