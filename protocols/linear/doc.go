// Package linear implements the linear layers of SCI_OT (CrypTFlow2 §5.1.1): products of a matrix
// that party 0 (the server) holds in the clear with a matrix that the two parties hold in additive
// shares over Z_{2^l}, by correlated oblivious transfer.
//
// # Protocol
//
// Let W (m×k) be party 0's and X = X0 + X1 (k×n) be shared, X_b at party b. Party 0 computes
// W·X0 locally. The cross term W·X1 is computed bit by bit: X1[r,c] = Σ_i 2^i·x_i, and for every
// element and every bit i party 1 (the OT receiver) uses x_i as its choice bit in a correlated OT
// whose correlation is the whole column W[:,r] (m words). Because the product is multiplied by 2^i,
// only the low l−i bits of each word matter, so the message of bit i is m·(l−i) bits. Combining
// the m messages of one column into one OT instance ("the sender messages combined over the rows
// of W") makes the cost of the product k·n·l correlated OTs of m·(l+1)/2 bits on average:
//
//	k·n·l·λ + k·n·m·l(l+1)/2 bits,   λ = 128
//
// instead of m·k·n·l OTs. Each party sums its 2^i-weighted outputs over the rows r into its share
// of the result; party 0 adds W·X0 to its share.
//
// By default every bit position i is one batch of correlated OTs (ot.SendCOTWide with m words of
// l−i bits per instance), so the communication is exactly the formula above and a product (or a
// chunk of it, see Options.Budget) takes l round trips. With Options.OneBatch all bit positions
// of a chunk share one batch of random OTs; party 1 turns the random choice bits into its share's
// bits with one flip bit per OT, and party 0 sends bit-packed corrections of l−i bits per word:
// for an OT with pads (r0, r1) (swapped when flipped) and correlation a it sends
// d = r0 − r1 + a mod 2^(l−i) and keeps −2^i·r0, and party 1, holding r_b, takes
// 2^i·(r_b + b·d) = 2^i·(r0 + b·a). Chunks are pipelined, so a stream takes two flights per chunk,
// at the price of k·n·l extra bits.
//
// # Convolutions
//
// Session.Conv2D runs a convolution (groups, strides, dilations, zero padding, batch ≥ 1; see
// ring.ConvGeom) with the OTs on the input elements instead of the im2col matrix, which repeats each
// element up to kh·kw times. Element e = (image n, channel c, position s) of party 1's share
// reaches, through each kernel offset k whose output position q(s, k) exists, the M/groups
// outputs (n, ·, q) of its group with the weights W[·, c, k]. So (W∗X1) = Σ_e Σ_i 2^i·x_(e,i)·a_e
// with a_e the concatenation of the vectors W[group's channels, c, k] over the pairs (k, q) of s:
// one OT per bit i of every element that some window reads, whose message is a_e at l−i bits per
// word, and each party adds 2^i times word (m, k) of its output at output (n, m, q). Elements that
// no window reads and padding cost nothing. Communication (ConvBits), with t the read positions of
// a plane and z the non-padding entries of one channel's im2col matrix:
//
//	N·C·t·l·(λ+1) + N·C·(M/groups)·z·l(l+1)/2 bits
//
// against ConvIm2colBits = Groups·MatMulBits on the im2col matrix (N·C·kh·kw·OH·OW·l·λ + … with
// padding entries). The convolution always runs in the one-batch flow (one batch of random OTs per
// chunk, one flip bit per OT, bit-packed corrections of variable length per element), since the
// messages of different elements have different lengths; its OTs carry 128-bit seeds that both
// parties expand, element by element, to exactly the pad bits needed (pads.go). ConvDirect picks
// the cheaper of the two by the exact formulas; only unpadded 1×1 convolutions (where the im2col
// matrix holds every read element once) stay matrix products.
//
// # Streams
//
// A Session runs over one or more ot.Session streams (an OT session and its forks, each on its own
// connection). A large product is split by elements of X across the streams, which run
// concurrently; each stream processes its part in chunks so that memory stays bounded. Party 0 is
// always the OT sender (it holds W).
//
// # Security
//
// Semi-honest, 128-bit computational security from the OT layer; the shares of the result are
// uniformly random (perfectly hiding). Party 1 learns nothing about W: it sees only OT messages
// masked by random pads it cannot open.
package linear
