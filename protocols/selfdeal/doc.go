// Package selfdeal makes, between the two parties of a two-party session and with the session's
// own OT (IKNP or Ferret), the correlations that the three-party mode's helper deals: random
// 1-out-of-N OTs with w l-bit words per message ([Core], an ot.DealtCore) and Beaver bit triples,
// regular and correlated ([Triples], a nonlinear.TripleDealer). Made before an inference's input
// is used (the offline phase), they leave the online phase only the derandomisation that package
// ot and package nonlinear already run on dealt correlations (protocols/ot/dealt.go,
// protocols/nonlinear/dealt.go).
//
// Making them takes no new cryptography: a random 1-of-2 OT with w-word messages is the session's
// random OT (ot.Session.SendROTWide), a random 1-of-N OT (N > 2, one word per message) is the
// session's random 1-of-N OT (ot.Session.SendROTN: the extension's pads, no message crosses the
// wire), and the triples come from the OT-based construction of package nonlinear
// (nonlinear.Session.BitTriples, CorrelatedBitTriples) on a session of their own per stream.
//
// How many: a [Plan] per stream lists, per shape and direction, the instances an inference
// draws, and the triples it asks for. A Core and a Triples record what was drawn (Core.Drawn,
// Triples.Drawn), so an inference's plan is that of the one before it (or of an earlier
// session's first inference: the counts depend on the program and the options, not on the
// input). [Core.MakeAhead] and [Triples.MakeAhead] make a plan's correlations, at both parties in
// the same order; what a draw finds missing (no plan, a plan cut by the memory bound, or a plan
// of another program) is made on demand at that draw, at both parties at once: draws of one
// shape and direction pair up in order, so both parties' buffers run out at the same draw. An
// on-demand draw runs the session's OT inside the protocol step that draws, which is sound only
// when the batches of a stream run one after another (nonlinear.Options.Sequential).
package selfdeal
