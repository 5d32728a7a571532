package passes

import (
	"fmt"
	"math"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
)

// The time model of the engine planner: what one party's CPU does per unit of work, measured on
// the project's 2-core reference machine (docs/benchmarks.md). Only the ratio of the two engines'
// estimates matters, and the byte counts that dominate them are exact.
const (
	otCPUBytesPerSec = 250e6                   // OT-based products: hashing and correlation per byte moved
	heProductTime    = 70 * time.Microsecond   // one ciphertext × plaintext product (NTT domain)
	heUploadTime     = 1200 * time.Microsecond // encrypt (party 1) and absorb (party 0) one ciphertext
	heReplyTime      = 1500 * time.Microsecond // re-randomise, flood, switch, decrypt one reply
	heWeightTime     = 60 * time.Microsecond   // transform one weight polynomial
)

// EngineEstimate is the planner's view of one linear layer under both engines.
type EngineEstimate struct {
	Instr            int // index of the instruction
	OTBytes, HEBytes int64
	OTTime, HETime   time.Duration
	Chosen           fixed.Engine
}

// PlanEngines chooses for every matmul, conv and bmatmul of p the engine with the smaller estimated time on
// the link net: exact traffic (lincost.ConvBits / MatMulBits and heplan.ConvCost / MatMulCost) over the
// bandwidth, the flights times half the round-trip time, and a CPU model. It records the choice in
// the instructions (fixed.Instr.Engine) and returns the estimates. A layer HE cannot run goes to OT.
func PlanEngines(p *fixed.Program, net netmodel.Model) ([]EngineEstimate, error) {
	var out []EngineEstimate
	l := p.Bits
	for i, in := range p.Instrs {
		var e EngineEstimate
		var hc heplan.Cost
		var herr error
		heFlights := int64(2)
		switch in.Op {
		case fixed.OpConv:
			g, err := p.ConvGeom(in)
			if err != nil {
				return nil, fmt.Errorf("plan engines: instruction %d (%s): %w", i, in.Source, err)
			}
			var otFlights int64
			if lincost.ConvDirectFor(g, l, false) {
				e.OTBytes, otFlights = lincost.ConvBits(g, l)/8, 3
			} else {
				e.OTBytes, otFlights = lincost.ConvIm2colBits(g, l, false)/8, int64(2*l)
			}
			e.OTTime = linkTime(net, e.OTBytes, otFlights) + time.Duration(float64(e.OTBytes)/otCPUBytesPerSec*float64(time.Second))
			hc, herr = heplan.ConvCost(g, l)
		case fixed.OpMatMul:
			w := p.Weights[in.Weight].Shape
			x := p.Tensors[in.In[0]].Shape
			m, k, n := w[0], w[1], x[1]
			e.OTBytes = lincost.MatMulBits(m, k, n, l) / 8
			e.OTTime = linkTime(net, e.OTBytes, int64(2*l)) + time.Duration(float64(e.OTBytes)/otCPUBytesPerSec*float64(time.Second))
			hc, herr = heplan.MatMulCost(m, k, n, l)
		case fixed.OpBatchMatMul:
			// Two shared factors: two cross products per product (lincost.SharedMatMulBits by OT;
			// two grouped products for the whole batch by HE, heplan.SharedMatMulCost).
			batch, m, k, n := fixed.BatchMatMulDims(p.Tensors[in.In[0]].Shape, p.Tensors[in.In[1]].Shape)
			if batch*m*k*n == 0 {
				continue
			}
			e.OTBytes = lincost.SharedMatMulBits(batch, m, k, n, l) / 8
			e.OTTime = linkTime(net, e.OTBytes, int64(2*l)) + time.Duration(float64(e.OTBytes)/otCPUBytesPerSec*float64(time.Second))
			hc, herr = heplan.SharedMatMulCost(batch, m, k, n, l)
			heFlights = 4
		default:
			continue
		}
		e.Instr = i
		if herr != nil {
			e.HEBytes, e.HETime = math.MaxInt64, time.Duration(math.MaxInt64)
		} else {
			e.HEBytes = hc.Bytes
			cpu := time.Duration(hc.Products)*heProductTime + time.Duration(hc.Uploads)*heUploadTime +
				time.Duration(hc.Replies)*heReplyTime + time.Duration(hc.Weights)*heWeightTime
			e.HETime = linkTime(net, hc.Bytes, heFlights) + cpu
		}
		e.Chosen = fixed.EngineOT
		if e.HETime < e.OTTime {
			e.Chosen = fixed.EngineHE
		}
		in.Engine = e.Chosen
		out = append(out, e)
	}
	return out, nil
}

// linkTime is the time a link needs for bytes in the given number of one-way flights.
func linkTime(net netmodel.Model, bytes, flights int64) time.Duration {
	t := time.Duration(flights) * net.RTT / 2
	if net.Bandwidth > 0 {
		t += time.Duration(float64(bytes) / net.Bandwidth * float64(time.Second))
	}
	return t
}

// NetModelNamed returns the link model the planner assumes for a link description: any that
// netmodel.Parse reads except "none" (the planner needs a link) — "lan" (also the default, "") and
// "wan", CrypTFlow2's evaluation settings, or "BANDWIDTH[,RTT]".
func NetModelNamed(name string) (netmodel.Model, error) {
	if name == "" {
		return netmodel.LAN(), nil
	}
	m, err := netmodel.Parse(name)
	if err != nil {
		return netmodel.Model{}, err
	}
	if m == nil {
		return netmodel.Model{}, fmt.Errorf("link %q: the planner needs a link (lan, wan or BANDWIDTH[,RTT])", name)
	}
	return *m, nil
}
