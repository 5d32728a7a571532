package fhe

import (
	"github.com/cryptflow-go/cryptflow/ring"
)

// entry is one coefficient of a sparse row: the row reads element col of its source.
type entry struct {
	col int32
	v   uint64 // mod n
}

// matrix is a sparse matrix by rows.
type matrix [][]entry

// term is a matrix applied to one encrypted vector (src, an index into the executor's vectors).
type term struct {
	src int
	m   matrix
}

// form is a tensor's value as an affine map of encrypted vectors: Σ term.m·vec[term.src] + c.
type form struct {
	n     int
	terms []term
	c     []uint64 // nil: zero
}

func identity(n int) matrix {
	m := make(matrix, n)
	for i := range m {
		m[i] = []entry{{col: int32(i), v: 1}}
	}
	return m
}

// composer multiplies sparse matrices mod n with a dense accumulator it reuses.
type composer struct {
	r       ring.Ring
	acc     []uint64
	mark    []bool
	touched []int32
}

func (c *composer) grow(n int) {
	if len(c.acc) < n {
		c.acc = make([]uint64, n)
		c.mark = make([]bool, n)
	}
}

// mul returns L·M, where L's rows read rows of M (srcCols columns).
func (c *composer) mul(L, M matrix, srcCols int) matrix {
	c.grow(srcCols)
	out := make(matrix, len(L))
	for i, row := range L {
		c.touched = c.touched[:0]
		for _, e := range row {
			for _, f := range M[e.col] {
				if !c.mark[f.col] {
					c.mark[f.col] = true
					c.touched = append(c.touched, f.col)
					c.acc[f.col] = 0
				}
				c.acc[f.col] = c.r.Add(c.acc[f.col], c.r.Mul(e.v, f.v))
			}
		}
		o := make([]entry, 0, len(c.touched))
		for _, j := range c.touched {
			if v := c.acc[j]; v != 0 {
				o = append(o, entry{col: j, v: v})
			}
			c.mark[j] = false
		}
		out[i] = o
	}
	return out
}

// add returns A + s·B (same number of rows).
func (c *composer) add(A, B matrix, s uint64, srcCols int) matrix {
	c.grow(srcCols)
	out := make(matrix, len(A))
	for i := range A {
		c.touched = c.touched[:0]
		for k, row := range [2][]entry{A[i], B[i]} {
			for _, f := range row {
				v := f.v
				if k == 1 {
					v = c.r.Mul(v, s)
				}
				if !c.mark[f.col] {
					c.mark[f.col] = true
					c.touched = append(c.touched, f.col)
					c.acc[f.col] = 0
				}
				c.acc[f.col] = c.r.Add(c.acc[f.col], v)
			}
		}
		o := make([]entry, 0, len(c.touched))
		for _, j := range c.touched {
			if v := c.acc[j]; v != 0 {
				o = append(o, entry{col: j, v: v})
			}
			c.mark[j] = false
		}
		out[i] = o
	}
	return out
}

// apply returns the form L·f (+ nothing): every term's matrix and the constant mapped by L.
func (c *composer) apply(L matrix, f *form, srcLen func(int) int) *form {
	g := &form{n: len(L)}
	for _, t := range f.terms {
		g.terms = append(g.terms, term{src: t.src, m: c.mul(L, t.m, srcLen(t.src))})
	}
	if f.c != nil {
		g.c = make([]uint64, len(L))
		for i, row := range L {
			var s uint64
			for _, e := range row {
				s = c.r.Add(s, c.r.Mul(e.v, f.c[e.col]))
			}
			g.c[i] = s
		}
	}
	return g
}

// sum returns a + s·b for forms of the same size, merging terms on the same vector.
func (c *composer) sum(a, b *form, s uint64, srcLen func(int) int) *form {
	g := &form{n: a.n}
	g.terms = append(g.terms, a.terms...)
	for _, t := range b.terms {
		merged := false
		for k := range g.terms {
			if g.terms[k].src == t.src {
				g.terms[k] = term{src: t.src, m: c.add(g.terms[k].m, t.m, s, srcLen(t.src))}
				merged = true
				break
			}
		}
		if !merged {
			zero := make(matrix, len(t.m))
			g.terms = append(g.terms, term{src: t.src, m: c.add(zero, t.m, s, srcLen(t.src))})
		}
	}
	if a.c != nil || b.c != nil {
		g.c = make([]uint64, a.n)
		for i := range g.c {
			if a.c != nil {
				g.c[i] = a.c[i]
			}
			if b.c != nil {
				g.c[i] = c.r.Add(g.c[i], c.r.Mul(s, b.c[i]))
			}
		}
	}
	return g
}

// scale returns s·f (every coefficient and the constant).
func (c *composer) scale(f *form, s uint64) *form {
	g := &form{n: f.n}
	for _, t := range f.terms {
		m := make(matrix, len(t.m))
		for i, row := range t.m {
			o := make([]entry, len(row))
			for k, e := range row {
				o[k] = entry{col: e.col, v: c.r.Mul(e.v, s)}
			}
			m[i] = o
		}
		g.terms = append(g.terms, term{src: t.src, m: m})
	}
	if f.c != nil {
		g.c = make([]uint64, f.n)
		for i, v := range f.c {
			g.c[i] = c.r.Mul(v, s)
		}
	}
	return g
}

// scaledIdentity reports whether m is s·I on a source of srcLen elements, and s.
func scaledIdentity(m matrix, srcLen int) (uint64, bool) {
	if len(m) != srcLen || srcLen == 0 {
		return 0, false
	}
	var s uint64
	for i, row := range m {
		if len(row) != 1 || row[0].col != int32(i) {
			return 0, false
		}
		if i == 0 {
			s = row[0].v
		} else if row[0].v != s {
			return 0, false
		}
	}
	return s, true
}
