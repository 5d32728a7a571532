package sci

import (
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Cost is the time and traffic of one category of backend calls at this party.
type Cost struct {
	Calls int
	Time  time.Duration // wall-clock time inside the calls
	// Stats is this party's traffic summed over all streams: bytes and frames sent and received,
	// and the flights (rounds) it sent. With several streams the flights of the streams, which
	// run in parallel, are added up; with one stream Rounds is this party's flight count.
	transport.Stats
}

// Add returns the sum of two costs.
func (c Cost) Add(d Cost) Cost {
	return Cost{Calls: c.Calls + d.Calls, Time: c.Time + d.Time, Stats: c.Stats.Add(d.Stats)}
}

// Sub returns c − d.
func (c Cost) Sub(d Cost) Cost {
	return Cost{Calls: c.Calls - d.Calls, Time: c.Time - d.Time, Stats: c.Stats.Sub(d.Stats)}
}

// Profile splits this party's time and traffic by kind of operation.
type Profile struct {
	Setup     Cost // OT base OTs and session hellos (once per session)
	Input     Cost // input sharing
	Linear    Cost // matrix products, convolutions, products with private constants and of two shared tensors
	Nonlinear Cost // ReLU, truncation, division, maxpool, argmax
	Reveal    Cost // opening outputs
}

// Online is the cost of the inference itself (everything but Setup).
func (p Profile) Online() Cost { return p.Input.Add(p.Linear).Add(p.Nonlinear).Add(p.Reveal) }

// Sub returns p − q field by field (the cost of the calls between two snapshots).
func (p Profile) Sub(q Profile) Profile {
	return Profile{Setup: p.Setup.Sub(q.Setup), Input: p.Input.Sub(q.Input), Linear: p.Linear.Sub(q.Linear),
		Nonlinear: p.Nonlinear.Sub(q.Nonlinear), Reveal: p.Reveal.Sub(q.Reveal)}
}

// Profile returns the accumulated costs since the backend was created.
func (b *Backend) Profile() Profile { return b.prof }
