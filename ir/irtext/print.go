// Package irtext is the HLIL text form: a printer (print.go) and a participle parser (parse.go).
// docs/hlil.md describes the syntax. The text form is lossless: Parse(Format(g)) reproduces g
// exactly (see Compare for what "exactly" means) unless the text was printed with elided constant
// data. It is a package of its own so that the runtime, which never reads HLIL text, does not link
// the parser.
package irtext

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/ir"
)

// Options controls Write.
type Options struct {
	// ElideData replaces the data of every constant with more than KeepElems elements by a short
	// digest: `elided "sha256:1a2b3c4d"`, the first 8 hex digits of the SHA-256 of the constant's
	// data as little-endian float32 bytes. Such text is for reading (athosc inspect); Parse
	// rejects it, because the graph it describes has no weights.
	ElideData bool
	// KeepElems is the largest constant (in elements) still printed in full when ElideData is set.
	KeepElems int
}

// Text returns the text form of g with all constant data. It is meant for tests and debugging;
// for a graph that Write rejects (a nil node, a Values entry filed under another name, a
// constant whose data does not match its shape, ...) it returns a single comment line naming the
// problem, which does not parse.
func Format(g *ir.Graph) string {
	var b bytes.Buffer
	if err := Write(&b, g, Options{}); err != nil {
		return "# cannot print HLIL graph: " + err.Error() + "\n"
	}
	return b.String()
}

// Write writes the text form of g to w. It fails, writing nothing, when g holds something the
// text form cannot represent (see Text), and otherwise only when w fails.
func Write(w io.Writer, g *ir.Graph, opts Options) error {
	if g == nil {
		return fmt.Errorf("print HLIL text: nil graph")
	}
	if err := checkTextPrintable(g); err != nil {
		return fmt.Errorf("print HLIL text of graph %q: %w", g.Name, err)
	}
	p := textPrinter{w: bufio.NewWriterSize(w, 64<<10), opts: opts}
	p.graph(g)
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("print HLIL text of graph %q: %w", g.Name, err)
	}
	return nil
}

// checkTextPrintable rejects graphs whose text would not parse back into the same graph.
func checkTextPrintable(g *ir.Graph) error {
	for i, in := range g.Inputs {
		if err := checkTextDType(in.DType); err != nil {
			return fmt.Errorf("input %d (%q): %w", i, in.Name, err)
		}
	}
	for _, name := range g.ConstNames() {
		c := g.Consts[name]
		if c == nil {
			return fmt.Errorf("constant %q is nil", name)
		}
		n, err := textTensorSize(c.Shape)
		if err != nil {
			return fmt.Errorf("constant %q: %w", name, err)
		}
		if n != len(c.Data) {
			return fmt.Errorf("constant %q has %d values for shape %v (%d elements)", name, len(c.Data), c.Shape, n)
		}
	}
	for i, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("node %d is nil", i)
		}
		for _, a := range n.Attrs.Names() {
			if k := n.Attrs[a].Kind; k < ir.AttrInt || k > ir.AttrFloats {
				return fmt.Errorf("%v: attribute %q has invalid kind %d", n, a, k)
			}
		}
	}
	for name, v := range g.Values {
		if v == nil {
			return fmt.Errorf("value %q is nil", name)
		}
		if v.Name != name {
			return fmt.Errorf("value %q is filed under the name %q", v.Name, name)
		}
		if err := checkTextDType(v.DType); err != nil {
			return fmt.Errorf("value %q: %w", name, err)
		}
	}
	return nil
}

func checkTextDType(d ir.DType) error {
	if d != ir.Float32 && d != ir.Int64 {
		return fmt.Errorf("invalid dtype %d", uint8(d))
	}
	return nil
}

// textTensorSize is Shape.Size for a tensor shape, with negative dimensions and overflow reported.
func textTensorSize(s ir.Shape) (int, error) {
	for _, d := range s {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", s)
		}
		if d == 0 {
			return 0, nil
		}
	}
	n := 1
	for _, d := range s {
		if n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v has too many elements", s)
		}
		n *= d
	}
	return n, nil
}

// textPrinter writes the text form. Write errors are sticky in bufio.Writer and reported by Flush.
type textPrinter struct {
	w    *bufio.Writer
	opts Options
	buf  []byte // scratch for number formatting
}

// textType is a Value without its name: what the text shows after "name:".
type textType struct {
	dtype ir.DType
	shape ir.Shape // nil: unknown shape
}

func (t textType) equal(u textType) bool {
	return t.dtype == u.dtype && (t.shape == nil) == (u.shape == nil) && t.shape.Equal(u.shape)
}

func (p *textPrinter) graph(g *ir.Graph) {
	p.w.WriteString("graph ")
	p.w.WriteString(strconv.Quote(g.Name))
	p.w.WriteString(" {\n")

	// implied is the Values map the parser will build from the input lines and the node output
	// types; `value` lines at the end correct it to g.Values.
	implied := map[string]textType{}
	for _, in := range g.Inputs {
		p.w.WriteString("  input ")
		p.name('%', in.Name)
		p.w.WriteString(": ")
		t := textType{in.DType, in.Shape}
		p.typ(t)
		p.w.WriteByte('\n')
		implied[in.Name] = t
	}
	if len(g.Consts) > 0 {
		if len(g.Inputs) > 0 {
			p.w.WriteByte('\n')
		}
		for _, name := range g.ConstNames() {
			p.constant(name, g.Consts[name])
		}
	}
	if len(g.Nodes) > 0 && len(g.Inputs)+len(g.Consts) > 0 {
		p.w.WriteByte('\n')
	}
	for _, n := range g.Nodes {
		p.node(g, n, implied)
	}
	if len(g.Outputs) > 0 && len(g.Inputs)+len(g.Consts)+len(g.Nodes) > 0 {
		p.w.WriteByte('\n')
	}
	for _, o := range g.Outputs {
		p.w.WriteString("  output ")
		p.name('%', o)
		p.w.WriteByte('\n')
	}
	p.valueFixups(g, implied)
	p.w.WriteString("}\n")
}

func (p *textPrinter) valueFixups(g *ir.Graph, implied map[string]textType) {
	names := make([]string, 0, len(g.Values)+len(implied))
	for n := range g.Values {
		names = append(names, n)
	}
	for n := range implied {
		if _, ok := g.Values[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	first := true
	for _, n := range names {
		v, have := g.Values[n]
		t, impl := implied[n]
		if have && impl && t.equal(textType{v.DType, v.Shape}) {
			continue
		}
		if first {
			p.w.WriteByte('\n')
			first = false
		}
		p.w.WriteString("  value ")
		p.name('%', n)
		p.w.WriteString(": ")
		if have {
			p.typ(textType{v.DType, v.Shape})
		} else {
			p.w.WriteString("none")
		}
		p.w.WriteByte('\n')
	}
}

func (p *textPrinter) constant(name string, c *ir.Tensor) {
	p.w.WriteString("  const ")
	p.name('%', name)
	p.w.WriteString(": ")
	shape := c.Shape
	if shape == nil {
		shape = ir.Shape{} // a tensor's shape is always known; nil is a scalar
	}
	p.typ(textType{ir.Float32, shape})
	p.w.WriteString(" = ")
	if p.opts.ElideData && len(c.Data) > p.opts.KeepElems {
		p.w.WriteString("elided ")
		p.w.WriteString(strconv.Quote("sha256:" + DataDigest(c.Data)))
		p.w.WriteByte('\n')
		return
	}
	p.floatList(c.Data, 4)
	p.w.WriteByte('\n')
}

// DataDigest returns the first 8 hex digits of the SHA-256 of data as little-endian float32
// bytes: the digest that elided constants print.
func DataDigest(data []float32) string {
	h := sha256.New()
	var chunk [4096]byte
	for len(data) > 0 {
		k := min(len(data), len(chunk)/4)
		for i, f := range data[:k] {
			binary.LittleEndian.PutUint32(chunk[4*i:], math.Float32bits(f))
		}
		h.Write(chunk[:4*k])
		data = data[k:]
	}
	return hex.EncodeToString(h.Sum(nil)[:4])
}

const textLineWidth = 100

// floatList writes a bracketed float list. A list that does not fit on the current line is broken
// into lines of at most textLineWidth columns, indented by indent spaces, with the closing bracket on a
// line of its own.
func (p *textPrinter) floatList(data []float32, indent int) {
	if len(data) == 0 {
		p.w.WriteString("[]")
		return
	}
	if len(data) <= 16 {
		b := append(p.buf[:0], '[')
		for i, f := range data {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendFloat32(b, f)
		}
		b = append(b, ']')
		p.buf = b
		if len(b) <= 60 {
			p.w.Write(b)
			return
		}
	}
	p.w.WriteString("[\n")
	pad := strings.Repeat(" ", indent)
	col := 0
	for i, f := range data {
		num := AppendFloat32(p.buf[:0], f)
		if i < len(data)-1 {
			num = append(num, ',')
		}
		p.buf = num
		if col > 0 && col+1+len(num) > textLineWidth {
			p.w.WriteByte('\n')
			col = 0
		}
		if col == 0 {
			p.w.WriteString(pad)
			col = indent
		} else {
			p.w.WriteByte(' ')
			col++
		}
		p.w.Write(num)
		col += len(num)
	}
	p.w.WriteByte('\n')
	p.w.WriteString(pad[:max(indent-2, 0)])
	p.w.WriteByte(']')
}

func (p *textPrinter) node(g *ir.Graph, n *ir.Node, implied map[string]textType) {
	p.w.WriteString("  ")
	for i, o := range n.Outputs {
		if i > 0 {
			p.w.WriteString(", ")
		}
		p.name('%', o)
		if v, ok := g.Values[o]; ok {
			p.w.WriteString(": ")
			t := textType{v.DType, v.Shape}
			p.typ(t)
			implied[o] = t
		}
	}
	if len(n.Outputs) > 0 {
		p.w.WriteByte(' ')
	}
	p.w.WriteString("= ")
	p.ident(string(n.Op))
	p.w.WriteByte('(')
	for i, in := range n.Inputs {
		if i > 0 {
			p.w.WriteString(", ")
		}
		p.name('%', in)
	}
	p.w.WriteByte(')')
	if len(n.Attrs) > 0 {
		p.w.WriteString(" {")
		for i, a := range n.Attrs.Names() {
			if i > 0 {
				p.w.WriteString(", ")
			}
			p.ident(a)
			p.w.WriteByte('=')
			p.attr(n.Attrs[a])
		}
		p.w.WriteByte('}')
	}
	if n.Name != "" {
		p.w.WriteByte(' ')
		p.name('@', n.Name)
	}
	p.w.WriteByte('\n')
}

func (p *textPrinter) attr(a ir.Attr) {
	b := p.buf[:0]
	switch a.Kind {
	case ir.AttrInt:
		b = strconv.AppendInt(b, a.Int, 10)
	case ir.AttrFloat:
		b = AppendFloat32(b, a.Float)
	case ir.AttrString:
		b = strconv.AppendQuote(b, a.String)
	case ir.AttrInts:
		if len(a.Ints) == 0 {
			b = append(b, "ints"...)
		}
		b = append(b, '[')
		for i, x := range a.Ints {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, x, 10)
		}
		b = append(b, ']')
	case ir.AttrFloats:
		if len(a.Floats) == 0 {
			b = append(b, "floats"...)
		}
		b = append(b, '[')
		for i, x := range a.Floats {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendFloat32(b, x)
		}
		b = append(b, ']')
	}
	p.w.Write(b)
	p.buf = b
}

func (p *textPrinter) typ(t textType) {
	p.w.WriteString(t.dtype.String())
	if t.shape == nil {
		p.w.WriteString("[*]")
		return
	}
	b := append(p.buf[:0], '[')
	for i, d := range t.shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	b = append(b, ']')
	p.w.Write(b)
	p.buf = b
}

// name writes a value name (sigil '%') or node name (sigil '@'): bare when it is made of ASCII
// letters, digits and "_.-/", quoted otherwise.
func (p *textPrinter) name(sigil byte, s string) {
	p.w.WriteByte(sigil)
	if isTextBareName(s) {
		p.w.WriteString(s)
		return
	}
	p.w.WriteString(strconv.Quote(s))
}

// ident writes an operator or attribute name: bare when it is an identifier, quoted otherwise.
func (p *textPrinter) ident(s string) {
	if isTextIdent(s) {
		p.w.WriteString(s)
		return
	}
	p.w.WriteString(strconv.Quote(s))
}

func isTextBareNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '/'
}

func isTextBareName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTextBareNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isTextIdentStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func isTextIdentByte(c byte) bool { return isTextIdentStart(c) || '0' <= c && c <= '9' }

// isTextIdent reports whether s prints bare as an operator or attribute name. "inf" and "nan" are
// numbers in the text form, so they are quoted.
func isTextIdent(s string) bool {
	if s == "" || !isTextIdentStart(s[0]) || s == "inf" || s == "nan" {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isTextIdentByte(s[i]) {
			return false
		}
	}
	return true
}

const (
	textCanonicalNaN    = 0x7fc00000
	textCanonicalNegNaN = 0xffc00000
)

// AppendFloat32 appends the text form of f: the shortest decimal that parses back to the same
// float32, always with a '.' or an exponent so that it reads as a float ("1.0", "2.5e-07"), and
// "inf", "-inf", "nan", "-nan" or "nan(0x7fa00001)" (the bit pattern of any other NaN), so that
// every float32 bit pattern survives a round trip.
func AppendFloat32(b []byte, f float32) []byte {
	switch {
	case f != f:
		switch bits := math.Float32bits(f); bits {
		case textCanonicalNaN:
			return append(b, "nan"...)
		case textCanonicalNegNaN:
			return append(b, "-nan"...)
		default:
			b = append(b, "nan(0x"...)
			b = append(b, fmt.Sprintf("%08x", bits)...)
			return append(b, ')')
		}
	case math.IsInf(float64(f), 1):
		return append(b, "inf"...)
	case math.IsInf(float64(f), -1):
		return append(b, "-inf"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' {
			return b
		}
	}
	return append(b, ".0"...)
}

// Compare returns nil when a and b are the same graph as far as the text form can tell,
// and otherwise an error describing the first difference. It compares the graph name, inputs,
// outputs, nodes (name, operator, inputs, outputs, and the meaningful field of every attribute),
// constants (shape and data bit for bit), and Values. A nil and an empty slice or map are the
// same; a nil and an empty constant shape are the same (both scalars), but a nil Value shape
// (unknown) differs from an empty one (scalar).
func Compare(a, b *ir.Graph) error {
	if a == nil || b == nil {
		if a == b {
			return nil
		}
		return fmt.Errorf("one graph is nil")
	}
	if a.Name != b.Name {
		return fmt.Errorf("graph name %q != %q", a.Name, b.Name)
	}
	if len(a.Inputs) != len(b.Inputs) {
		return fmt.Errorf("%d inputs != %d", len(a.Inputs), len(b.Inputs))
	}
	for i := range a.Inputs {
		if err := diffValues(&a.Inputs[i], &b.Inputs[i]); err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
	}
	if err := diffStrings("outputs", a.Outputs, b.Outputs); err != nil {
		return err
	}
	if len(a.Consts) != len(b.Consts) {
		return fmt.Errorf("%d constants != %d", len(a.Consts), len(b.Consts))
	}
	for name, ca := range a.Consts {
		cb, ok := b.Consts[name]
		if !ok {
			return fmt.Errorf("constant %q missing from the second graph", name)
		}
		if err := diffTensors(ca, cb); err != nil {
			return fmt.Errorf("constant %q: %w", name, err)
		}
	}
	if len(a.Nodes) != len(b.Nodes) {
		return fmt.Errorf("%d nodes != %d", len(a.Nodes), len(b.Nodes))
	}
	for i := range a.Nodes {
		if err := diffNodes(a.Nodes[i], b.Nodes[i]); err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	if len(a.Values) != len(b.Values) {
		return fmt.Errorf("%d Values entries != %d", len(a.Values), len(b.Values))
	}
	for name, va := range a.Values {
		vb, ok := b.Values[name]
		if !ok {
			return fmt.Errorf("the second graph has no Values entry %q", name)
		}
		if err := diffValues(va, vb); err != nil {
			return fmt.Errorf("entry %q of Values: %w", name, err)
		}
	}
	return nil
}

func diffValues(a, b *ir.Value) error {
	if a == nil || b == nil {
		if a == b {
			return nil
		}
		return fmt.Errorf("one value is nil")
	}
	if a.Name != b.Name {
		return fmt.Errorf("name %q != %q", a.Name, b.Name)
	}
	if !(textType{a.DType, a.Shape}).equal(textType{b.DType, b.Shape}) {
		return fmt.Errorf("type %s != %s", textTypeString(a), textTypeString(b))
	}
	return nil
}

func textTypeString(v *ir.Value) string {
	if v.Shape == nil {
		return v.DType.String() + "[*]"
	}
	return v.DType.String() + v.Shape.String()
}

func diffTensors(a, b *ir.Tensor) error {
	if a == nil || b == nil {
		if a == b {
			return nil
		}
		return fmt.Errorf("one tensor is nil")
	}
	if !a.Shape.Equal(b.Shape) {
		return fmt.Errorf("shape %v != %v", a.Shape, b.Shape)
	}
	return diffFloats(a.Data, b.Data)
}

func diffFloats(a, b []float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d values != %d", len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return fmt.Errorf("element %d: %s (0x%08x) != %s (0x%08x)", i,
				AppendFloat32(nil, a[i]), math.Float32bits(a[i]), AppendFloat32(nil, b[i]), math.Float32bits(b[i]))
		}
	}
	return nil
}

func diffStrings(what string, a, b []string) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d %s != %d", len(a), what, len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("%s[%d]: %q != %q", what, i, a[i], b[i])
		}
	}
	return nil
}

func diffNodes(a, b *ir.Node) error {
	if a == nil || b == nil {
		if a == b {
			return nil
		}
		return fmt.Errorf("one node is nil")
	}
	if a.Name != b.Name || a.Op != b.Op {
		return fmt.Errorf("%s node %q != %s node %q", a.Op, a.Name, b.Op, b.Name)
	}
	if err := diffStrings("inputs", a.Inputs, b.Inputs); err != nil {
		return fmt.Errorf("%v: %w", a, err)
	}
	if err := diffStrings("outputs", a.Outputs, b.Outputs); err != nil {
		return fmt.Errorf("%v: %w", a, err)
	}
	if len(a.Attrs) != len(b.Attrs) {
		return fmt.Errorf("%v: %d attributes != %d", a, len(a.Attrs), len(b.Attrs))
	}
	for name, x := range a.Attrs {
		y, ok := b.Attrs[name]
		if !ok {
			return fmt.Errorf("%v: attribute %q missing from the second graph", a, name)
		}
		if err := diffAttrs(x, y); err != nil {
			return fmt.Errorf("%v: attribute %q: %w", a, name, err)
		}
	}
	return nil
}

func diffAttrs(x, y ir.Attr) error {
	if x.Kind != y.Kind {
		return fmt.Errorf("kind %d != %d", x.Kind, y.Kind)
	}
	switch x.Kind {
	case ir.AttrInt:
		if x.Int != y.Int {
			return fmt.Errorf("%d != %d", x.Int, y.Int)
		}
	case ir.AttrFloat:
		return diffFloats([]float32{x.Float}, []float32{y.Float})
	case ir.AttrString:
		if x.String != y.String {
			return fmt.Errorf("%q != %q", x.String, y.String)
		}
	case ir.AttrInts:
		if len(x.Ints) != len(y.Ints) {
			return fmt.Errorf("%d ints != %d", len(x.Ints), len(y.Ints))
		}
		for i := range x.Ints {
			if x.Ints[i] != y.Ints[i] {
				return fmt.Errorf("element %d: %d != %d", i, x.Ints[i], y.Ints[i])
			}
		}
	case ir.AttrFloats:
		return diffFloats(x.Floats, y.Floats)
	}
	return nil
}

// CheckRoundTrip prints g, parses the text back and checks that the result is the same graph
// (Compare) and prints to the same text. It is the test every producer of HLIL graphs can
// run on its output.
func CheckRoundTrip(g *ir.Graph) error {
	var b bytes.Buffer
	if err := Write(&b, g, Options{}); err != nil {
		return err
	}
	text := b.String()
	h, err := Parse(text)
	if err != nil {
		return fmt.Errorf("parse printed text of graph %q: %w", g.Name, err)
	}
	if err := Compare(g, h); err != nil {
		return fmt.Errorf("graph %q changed in a text round trip: %w", g.Name, err)
	}
	b.Reset()
	if err := Write(&b, h, Options{}); err != nil {
		return fmt.Errorf("reprint parsed graph %q: %w", g.Name, err)
	}
	if b.String() != text {
		return fmt.Errorf("graph %q: print(parse(text)) differs from text", g.Name)
	}
	return nil
}
