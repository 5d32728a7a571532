package nonlinear

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// What every protocol method does with its batch before running it: check
// the lengths of its arguments and cut it into chunks that fit a stream's
// budget (see chunks).

// chunkSize is the number of elements per chunk for a protocol that builds
// words OT message words per element (a positive multiple of 64).
func (st *stream) chunkSize(words int) int {
	if words <= 0 {
		words = 1
	}
	return max(64, st.budget/words&^63)
}

// checkBits checks that v holds at least n packed bits.
func (s *Session) checkBits(op, name string, v []uint64, n int) error {
	if len(v) < bitvec.Words(n) {
		return fmt.Errorf("nonlinear: %s: %s has %d words, want %d for %d bits", op, name, len(v), bitvec.Words(n), n)
	}
	return nil
}

// checkLen checks that v has exactly n elements.
func checkLen(op, name string, v []uint64, n int) error {
	if len(v) != n {
		return fmt.Errorf("nonlinear: %s: len(%s)=%d, want %d", op, name, len(v), n)
	}
	return nil
}
