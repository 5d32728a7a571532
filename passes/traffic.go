package passes

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
)

// EstimateEngines returns the planner's estimates (PlanEngines) for the linear layers of p on the
// link net without changing p, with Chosen set to the engine the backend will use: OT for
// "sciot", HE for "scihe", and for "auto" the engine recorded in the program (the planner's
// choice when the program was compiled with plan-engines; OT where none is recorded, as the auto
// backend does). athosc compile prints it, so that a pinned backend's expected traffic stands
// beside what auto would move.
func EstimateEngines(p *fixed.Program, net netmodel.Model, backend string) ([]EngineEstimate, error) {
	switch backend {
	case "sciot", "scihe", "auto":
	default:
		return nil, fmt.Errorf("estimate engines: unknown backend %q (sciot, scihe, auto)", backend)
	}
	// PlanEngines records its choices in the instructions: plan a copy of them.
	cp := *p
	cp.Instrs = make([]*fixed.Instr, len(p.Instrs))
	for i, in := range p.Instrs {
		c := *in
		cp.Instrs[i] = &c
	}
	est, err := PlanEngines(&cp, net)
	if err != nil {
		return nil, err
	}
	for i := range est {
		e := &est[i]
		switch backend {
		case "sciot":
			e.Chosen = fixed.EngineOT
		case "scihe":
			e.Chosen = fixed.EngineHE
		default:
			e.Chosen = p.Instrs[e.Instr].Engine
			if e.Chosen != fixed.EngineHE {
				e.Chosen = fixed.EngineOT
			}
		}
	}
	return est, nil
}

// Bytes returns the traffic the estimate expects for the chosen engine (both directions, both
// parties' messages), or -1 when the chosen engine cannot run the layer (HE on a layer it does not
// support).
func (e EngineEstimate) Bytes() int64 {
	b := e.OTBytes
	if e.Chosen == fixed.EngineHE {
		b = e.HEBytes
	}
	if b == math.MaxInt64 {
		return -1
	}
	return b
}
