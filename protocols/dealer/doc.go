// Package dealer is the three-party setting of CrypTFlow's Porthos and of CryptGPU: the server
// (party 0) and the client (party 1) keep additive shares over Z_{2^l} as in the two-party
// protocols, and a helper (party 2) that never sees data deals them correlated randomness.
//
// Security: semi-honest, any single party corrupted, no two colluding. Party 0 and the helper
// share a seed k02, party 1 and the helper a seed k12 (each drawn from crypto/rand by the data
// party and sent to the helper when the session starts, [NewLink]). Everything a data party can
// compute from its own seed it computes itself; the helper sends only corrections, and only to
// the party that cannot compute them. The helper learns nothing but the shapes and sizes of the
// requests (public: they follow from the program).
//
// What the helper deals (docs/protocols.md, "Three parties"):
//
//   - Short random OTs ([Core] is an ot.DealtCore): a batch of random 1-out-of-N OTs with w l-bit
//     words per message, the sender's messages from PRG(k_s2), the receiver's choices from
//     PRG(k_r2); the helper sends the receiver its chosen words: w·l bits per instance whatever
//     N is ([DealtBytes]), nothing between the data parties. ot.Session derives COT_l, RCOT, ROT,
//     chosen OT and 1-of-N OT from them with the data parties' messages of any random-choice
//     core, so every CrypTFlow2 protocol of package nonlinear runs on it unchanged.
//   - Random COTs (Core, an ot.Core; the session's block COTs): in a COT that party s sends, its
//     keys k_i and its Δ come from PRG(k_s2) and the receiver's choice bits b_i from PRG(k_r2);
//     the helper sends the receiver m_i = k_i ⊕ b_i·Δ: 128 bits per COT, on the receiver's link
//     to the helper, nothing between the two data parties.
//   - Beaver bit triples ([Triples], nonlinear.TripleDealer): party 0's shares (d0, e0, f0) from
//     PRG(k02), party 1's (d1, e1) from PRG(k12), and the helper sends party 1
//     f1 = (d0⊕d1)∧(e0⊕e1) ⊕ f0: 1 bit per triple, 2 bits per correlated pair.
//   - Linear layers ([Linear]) without OT or HE: for z = W·x with party 0's W, B = PRG(k02) per
//     weight tensor, F = W − B sent to party 1 once per session (every tensor's at set-up with
//     [Linear.ShareWeights]); per call A = PRG(k12), R = PRG(k02), the helper sends party 1
//     D = B·A − R; online party 1 sends x1 − A and party 0 computes z0 = W·(x0 + x1 − A) + R,
//     party 1 z1 = F·A + D (before the input when D was dealt ahead: [Linear.Prepare]).
//
// Requests: a data party asks its link for what it needs, in the order both data parties use
// it; the helper answers requests in order, one link at a time per goroutine ([Serve]). A
// request for dealt OTs names the shape and the position of its first instance in the shape's
// sequence, so those may also be fetched ahead ([Link.SetPrefetch]). In a session of several
// inferences of one program, [Link.SetAhead] deals each inference's correlations ahead: the link
// records an inference's requests, predicts the next one's (dealt OTs and linear corrections are
// addressed by position, the rest follow in stream order) and fetches their replies in the
// background, so that the inference makes no request to the helper; a [Trace] of a first
// inference (its requests, which depend on the program, not on values) lets a later session
// deal its first inference at its start, before the input is used ([Link.SetFirstTrace]).
package dealer
