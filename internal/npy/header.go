package npy

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// header is the parsed header dictionary of a .npy file.
type header struct {
	descr   string
	fortran bool
	shape   []int
}

// parseHeader parses the Python dictionary literal that makes up a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 28), }" followed by padding. Only the
// literal forms NumPy writes are accepted: string keys, a string descr, True/False, and a tuple
// (or list) of non-negative integers. Version 3.0 headers are UTF-8; earlier ones are Latin-1,
// which for the accepted grammar means ASCII.
func parseHeader(b []byte, utf8Header bool) (header, error) {
	if utf8Header && !utf8.Valid(b) {
		return header{}, errors.New("version 3.0 header is not valid UTF-8")
	}
	p := &headerParser{s: b}
	h, err := p.dict()
	if err != nil {
		return header{}, fmt.Errorf("at byte %d: %w", p.i, err)
	}
	return h, nil
}

type headerParser struct {
	s []byte
	i int
}

func (p *headerParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *headerParser) peek() byte {
	p.skipSpace()
	if p.i >= len(p.s) {
		return 0
	}
	return p.s[p.i]
}

func (p *headerParser) expect(c byte) error {
	if got := p.peek(); got != c {
		if got == 0 {
			return fmt.Errorf("expected %q, found end of header", c)
		}
		return fmt.Errorf("expected %q, found %q", c, got)
	}
	p.i++
	return nil
}

func (p *headerParser) dict() (header, error) {
	var h header
	if err := p.expect('{'); err != nil {
		return h, err
	}
	seen := map[string]bool{}
	for p.peek() != '}' {
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("dictionary key: %w", err)
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return h, err
		}
		switch key {
		case "descr":
			if h.descr, err = p.str(); err != nil {
				return h, fmt.Errorf("descr: %w (structured dtypes are not supported)", err)
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return h, fmt.Errorf("fortran_order: %w", err)
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, fmt.Errorf("shape: %w", err)
			}
		default:
			return h, fmt.Errorf("unexpected key %q", key)
		}
		if p.peek() != ',' {
			break
		}
		p.i++
	}
	if err := p.expect('}'); err != nil {
		return h, err
	}
	if rest := p.peek(); rest != 0 {
		return h, fmt.Errorf("unexpected %q after the dictionary", rest)
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

// str parses a single- or double-quoted string without escapes (NumPy never writes any).
func (p *headerParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		if q == 0 {
			return "", errors.New("expected a string, found end of header")
		}
		return "", fmt.Errorf("expected a string, found %q", q)
	}
	start := p.i + 1
	for j := start; j < len(p.s); j++ {
		switch p.s[j] {
		case q:
			p.i = j + 1
			return string(p.s[start:j]), nil
		case '\\', '\n':
			return "", errors.New("escapes and newlines in strings are not supported")
		}
	}
	return "", errors.New("unterminated string")
}

func (p *headerParser) boolean() (bool, error) {
	p.skipSpace()
	for _, w := range []struct {
		lit string
		val bool
	}{{"True", true}, {"False", false}} {
		if end := p.i + len(w.lit); end <= len(p.s) && string(p.s[p.i:end]) == w.lit {
			p.i = end
			return w.val, nil
		}
	}
	return false, errors.New("expected True or False")
}

// tuple parses "()", "(3,)", "(2, 3)" (or the list forms) into non-negative ints.
func (p *headerParser) tuple() ([]int, error) {
	open := p.peek()
	var closing byte
	switch open {
	case '(':
		closing = ')'
	case '[':
		closing = ']'
	default:
		return nil, errors.New("expected a tuple")
	}
	p.i++
	dims := []int{}
	comma := false // whether the last element was followed by a comma
	for p.peek() != closing {
		if len(dims) == maxDims {
			return nil, fmt.Errorf("more than %d dimensions", maxDims)
		}
		d, err := p.integer()
		if err != nil {
			return nil, err
		}
		dims = append(dims, d)
		if comma = p.peek() == ','; !comma {
			break
		}
		p.i++
	}
	if err := p.expect(closing); err != nil {
		return nil, err
	}
	// Python's one-element tuple needs its comma: "(3)" is the integer 3, not a shape.
	if open == '(' && len(dims) == 1 && !comma {
		return nil, errors.New("one-element tuple without a trailing comma")
	}
	return dims, nil
}

// integer parses a non-negative decimal integer (Python 2 "L" suffix allowed).
func (p *headerParser) integer() (int, error) {
	p.skipSpace()
	start := p.i
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		d := int(p.s[p.i] - '0')
		if n > (math.MaxInt-d)/10 {
			return 0, errors.New("dimension overflows int")
		}
		n = n*10 + d
		p.i++
	}
	if p.i == start {
		if p.i < len(p.s) && p.s[p.i] == '-' {
			return 0, errors.New("negative dimension")
		}
		return 0, errors.New("expected a non-negative integer")
	}
	if p.i < len(p.s) && p.s[p.i] == 'L' {
		p.i++
	}
	return n, nil
}
