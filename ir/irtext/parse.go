package irtext

// The HLIL text parser. The statement grammar is a participle grammar over a hand-written lexer.
// The lexer returns every bracketed list ("[1,2]", a shape, a constant's data) as one List token,
// which the conversion to a Graph then reads with a plain scanner (scanTextList): participle handles
// the few tokens of each line, and a constant with a million elements costs one token rather than
// two million.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
	"github.com/cryptflow-go/cryptflow/ir"
)

// Error is a syntax or semantic error in HLIL text, at a 1-based line and column (columns
// count characters). Its message has the form "line:col: what is wrong".
type Error struct {
	Line, Column int
	Msg          string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg) }

func textErrAt(pos lexer.Position, format string, args ...any) *Error {
	return &Error{Line: pos.Line, Column: pos.Column, Msg: fmt.Sprintf(format, args...)}
}

// Parse parses the text form of an HLIL graph (docs/hlil.md). Errors are *Error values
// with the line and column of the problem. Text printed with Options.ElideData is rejected:
// it has no constant data to build a graph from. Parse checks the syntax and what the Graph
// structure needs (no duplicate constants, attributes or value statements, constant data that
// matches its shape), not whether the graph is a valid program.
func Parse(src string) (*ir.Graph, error) {
	p, err := textParser()
	if err != nil {
		return nil, fmt.Errorf("build HLIL text parser: %w", err)
	}
	file, err := p.ParseString("", src)
	if err != nil {
		var te *Error
		if errors.As(err, &te) {
			return nil, te
		}
		var ue *participle.UnexpectedTokenError
		if errors.As(err, &ue) {
			return nil, textErrAt(ue.Position(), "%s", textUnexpectedMessage(ue, src))
		}
		var pe participle.Error
		if errors.As(err, &pe) {
			return nil, textErrAt(pe.Position(), "%s", pe.Message())
		}
		return nil, err
	}
	g, terr := file.graph()
	if terr != nil {
		return nil, terr
	}
	return g, nil
}

// textUnexpectedMessage rewrites participle's "unexpected token" message: it shortens a long token,
// names the end of input, and keeps only the first item of the expected sequence, in words.
func textUnexpectedMessage(ue *participle.UnexpectedTokenError, src string) string {
	found := "end of input"
	if ue.Unexpected.Type == tokEOL {
		found = "end of line"
	} else if !ue.Unexpected.EOF() {
		v := ue.Unexpected.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		found = strconv.Quote(v)
	}
	msg := ue.Message()
	prefix := fmt.Sprintf("unexpected token %q (expected ", ue.Unexpected)
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, ")") {
		if ue.Unexpected.Pos.Offset <= textFirstTokenOffset(src) {
			return "unexpected " + found + `, expected "graph" (the text starts with graph "name" {)`
		}
		return "unexpected " + found + " after the end of the graph"
	}
	return "unexpected " + found + ", expected " + textExpectedWords(msg[len(prefix):len(msg)-1])
}

// textFirstTokenOffset is the offset of the first token of src.
func textFirstTokenOffset(src string) int {
	l := textLexer{src: src, pos: lexer.Position{Line: 1, Column: 1}, atEOL: true}
	t, err := l.Next()
	if err != nil {
		return 0
	}
	return t.Pos.Offset
}

// textExpectedWords turns the first term of a participle EBNF expectation into words.
func textExpectedWords(ebnf string) string {
	depth, quoted := 0, false
	term := ebnf
	for i := 0; i < len(ebnf); i++ {
		switch c := ebnf[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
			if c == '\\' {
				i++
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ' ' && depth == 0:
			term = ebnf[:i]
			i = len(ebnf)
		}
	}
	if strings.HasSuffix(term, "?") || strings.HasSuffix(term, "*") {
		term = ebnf // an optional first term: the whole expectation says more
	}
	return textExpectedName(term)
}

func textExpectedName(term string) string {
	switch term {
	case "AstType":
		return "a type such as f32[1,3]"
	case "AstAttr":
		return "an attribute"
	case "AstRef", "AstOut", "AstTyped", "AstConst", "AstValue", "<name>":
		return "a %name"
	case "(<ident> | <string>)":
		return "a name (an identifier or a quoted string)"
	case "(<list> | (\"elided\" <string>))":
		return "a [list] of values"
	case "<eol>":
		return "the end of the line"
	case "<string>":
		return "a quoted string"
	case "<list>":
		return "a [list]"
	case "<label>":
		return "an @name"
	}
	return term
}

// textParser builds the participle parser once; it is immutable afterwards.
var textParser = sync.OnceValues(func() (*participle.Parser[astFile], error) {
	// The grammar is LL(1): with lookahead 0 a statement that fails after its first token is an
	// error at the failing token, not a silent end of the statement list.
	return participle.Build[astFile](participle.Lexer(textLexerDef{}), participle.UseLookahead(0))
})

// ---- grammar ----

// Statements end at the end of their line (an EOL token); a list may span lines.
type astFile struct {
	Name  lexer.Token `parser:"'graph' @String '{' EOL?"`
	Stmts []*astStmt  `parser:"( @@ EOL )* '}' EOL?"`
}

type astStmt struct {
	Input  *astTyped `parser:"  'input' @@"`
	Const  *astConst `parser:"| 'const' @@"`
	Output *astRef   `parser:"| 'output' @@"`
	Value  *astValue `parser:"| 'value' @@"`
	Node   *astNode  `parser:"| @@"`
	// Bad catches a statement that starts with anything else, for a clearer error than `expected "}"`.
	Bad *lexer.Token `parser:"| @(Ident | Int | Float | String | List | Label) ~EOL*"`
}

type astRef struct {
	Name lexer.Token `parser:"@Name"`
}

type astTyped struct {
	Name lexer.Token `parser:"@Name ':'"`
	Type astType     `parser:"@@"`
}

type astType struct {
	DType lexer.Token `parser:"@Ident"`
	Shape lexer.Token `parser:"@List"`
}

type astConst struct {
	Name   lexer.Token  `parser:"@Name ':'"`
	Type   astType      `parser:"@@ '='"`
	Data   *lexer.Token `parser:"( @List"`
	Elided *lexer.Token `parser:"| 'elided' @String )"`
}

type astValue struct {
	Name lexer.Token  `parser:"@Name ':'"`
	None *lexer.Token `parser:"( @'none'"`
	Type *astType     `parser:"| @@ )"`
}

type astNode struct {
	Outs  []*astOut    `parser:"( @@ ( ',' @@ )* )? '='"`
	Op    lexer.Token  `parser:"@(Ident | String)"`
	Args  []*astRef    `parser:"'(' ( @@ ( ',' @@ )* )? ')'"`
	Attrs []*astAttr   `parser:"( '{' ( @@ ( ',' @@ )* )? '}' )?"`
	Label *lexer.Token `parser:"@Label?"`
}

type astOut struct {
	Name lexer.Token `parser:"@Name"`
	Type *astType    `parser:"( ':' @@ )?"`
}

type astAttr struct {
	Name   lexer.Token  `parser:"@(Ident | String) '='"`
	Scalar *lexer.Token `parser:"( @(Int | Float | String)"`
	Kind   *lexer.Token `parser:"| @Ident?"`
	List   *lexer.Token `parser:"  @List )"`
}

// ---- AST to Graph ----

func (f *astFile) graph() (*ir.Graph, *Error) {
	name, err := textUnquote(f.Name)
	if err != nil {
		return nil, err
	}
	g := ir.NewGraph(name)
	type valueStmt struct {
		name string
		v    *ir.Value // nil: `none`
	}
	var valueStmts []valueStmt
	seenValue := map[string]bool{}
	setValue := func(name string, t textType) {
		g.Values[name] = &ir.Value{Name: name, DType: t.dtype, Shape: t.shape}
	}
	for _, s := range f.Stmts {
		switch {
		case s.Input != nil:
			name, err := decodeTextName(s.Input.Name)
			if err != nil {
				return nil, err
			}
			t, err := s.Input.Type.textType()
			if err != nil {
				return nil, err
			}
			g.Inputs = append(g.Inputs, ir.Value{Name: name, DType: t.dtype, Shape: cloneShapeKeepEmpty(t.shape)})
			setValue(name, t)
		case s.Const != nil:
			name, c, err := s.Const.tensor()
			if err != nil {
				return nil, err
			}
			if _, dup := g.Consts[name]; dup {
				return nil, textErrAt(s.Const.Name.Pos, "duplicate constant %s", s.Const.Name.Value)
			}
			g.Consts[name] = c
		case s.Output != nil:
			name, err := decodeTextName(s.Output.Name)
			if err != nil {
				return nil, err
			}
			g.Outputs = append(g.Outputs, name)
		case s.Value != nil:
			name, err := decodeTextName(s.Value.Name)
			if err != nil {
				return nil, err
			}
			if seenValue[name] {
				return nil, textErrAt(s.Value.Name.Pos, "duplicate value statement for %s", s.Value.Name.Value)
			}
			seenValue[name] = true
			vs := valueStmt{name: name}
			if s.Value.Type != nil {
				t, err := s.Value.Type.textType()
				if err != nil {
					return nil, err
				}
				vs.v = &ir.Value{Name: name, DType: t.dtype, Shape: t.shape}
			}
			valueStmts = append(valueStmts, vs)
		case s.Bad != nil:
			what := s.Bad.Value
			if len(what) > 40 {
				what = what[:37] + "..."
			}
			return nil, textErrAt(s.Bad.Pos, "expected a statement (input, const, output, value, or a node %%out = Op(%%in)), found %q", what)
		case s.Node != nil:
			n, err := s.Node.node()
			if err != nil {
				return nil, err
			}
			for _, o := range s.Node.Outs {
				if o.Type != nil {
					t, err := o.Type.textType()
					if err != nil {
						return nil, err
					}
					name, _ := decodeTextName(o.Name) // decoded without error in node()
					setValue(name, t)
				}
			}
			g.Nodes = append(g.Nodes, n)
		}
	}
	// value statements correct the Values that input lines and node output types implied.
	for _, vs := range valueStmts {
		if vs.v == nil {
			delete(g.Values, vs.name)
		} else {
			g.Values[vs.name] = vs.v
		}
	}
	return g, nil
}

// cloneShapeKeepEmpty copies a shape, keeping the difference between nil (unknown) and empty (scalar).
func cloneShapeKeepEmpty(s ir.Shape) ir.Shape {
	if s == nil {
		return nil
	}
	return append(ir.Shape{}, s...)
}

func (t *astType) textType() (textType, *Error) {
	var vt textType
	switch t.DType.Value {
	case "f32":
		vt.dtype = ir.Float32
	case "i64":
		vt.dtype = ir.Int64
	default:
		return vt, textErrAt(t.DType.Pos, "unknown element type %q (want f32 or i64)", t.DType.Value)
	}
	shape, err := parseTextShape(t.Shape)
	if err != nil {
		return vt, err
	}
	vt.shape = shape
	return vt, nil
}

// parseTextShape reads "[d0,d1,...]" (empty for a scalar) or "[*]" (unknown shape: nil).
func parseTextShape(tok lexer.Token) (ir.Shape, *Error) {
	inner := strings.TrimSpace(tok.Value[1 : len(tok.Value)-1])
	if inner == "*" {
		return nil, nil
	}
	shape := ir.Shape{}
	err := scanTextList(tok, func(off int, isFloat bool, elem string) *Error {
		if isFloat {
			return textErrAt(textPosIn(tok, off), "dimension %s is not an integer", elem)
		}
		d, err := strconv.ParseInt(elem, 10, strconv.IntSize)
		if err != nil {
			return textErrAt(textPosIn(tok, off), "dimension %s is out of range", elem)
		}
		shape = append(shape, int(d))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return shape, nil
}

func (c *astConst) tensor() (string, *ir.Tensor, *Error) {
	name, err := decodeTextName(c.Name)
	if err != nil {
		return "", nil, err
	}
	t, err := c.Type.textType()
	if err != nil {
		return "", nil, err
	}
	if t.dtype != ir.Float32 {
		return "", nil, textErrAt(c.Type.DType.Pos, "constant %s has element type %v; constants are f32", c.Name.Value, t.dtype)
	}
	if t.shape == nil {
		return "", nil, textErrAt(c.Type.Shape.Pos, "constant %s needs a known shape", c.Name.Value)
	}
	if c.Elided != nil {
		return "", nil, textErrAt(c.Elided.Pos,
			"constant %s has elided data (%s): text printed with elided constants cannot be parsed back into a graph",
			c.Name.Value, c.Elided.Value)
	}
	n, serr := textTensorSize(t.shape)
	if serr != nil {
		return "", nil, textErrAt(c.Type.Shape.Pos, "constant %s: %v", c.Name.Value, serr)
	}
	data := c.Data
	// Every element takes at least two characters ("0,"), so a shape larger than that cannot match;
	// checking first keeps a hostile shape from allocating.
	if n > len(data.Value) {
		return "", nil, textErrAt(data.Pos, "constant %s: shape %v needs %d values, the list has fewer", c.Name.Value, t.shape, n)
	}
	vals := make([]float32, 0, n)
	err = scanTextList(*data, func(off int, _ bool, elem string) *Error {
		if len(vals) == n {
			return textErrAt(textPosIn(*data, off), "constant %s: more than the %d values of shape %v", c.Name.Value, n, t.shape)
		}
		f, err := parseTextFloat32(elem)
		if err != nil {
			return textErrAt(textPosIn(*data, off), "%v", err)
		}
		vals = append(vals, f)
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if len(vals) != n {
		return "", nil, textErrAt(data.Pos, "constant %s: %d values for shape %v (%d elements)", c.Name.Value, len(vals), t.shape, n)
	}
	return name, &ir.Tensor{Shape: t.shape, Data: vals}, nil
}

func (a *astNode) node() (*ir.Node, *Error) {
	n := &ir.Node{}
	op, err := decodeTextIdent(a.Op)
	if err != nil {
		return nil, err
	}
	n.Op = ir.Op(op)
	if a.Label != nil {
		if n.Name, err = decodeTextName(*a.Label); err != nil {
			return nil, err
		}
	}
	for _, o := range a.Outs {
		name, err := decodeTextName(o.Name)
		if err != nil {
			return nil, err
		}
		n.Outputs = append(n.Outputs, name)
	}
	for _, in := range a.Args {
		name, err := decodeTextName(in.Name)
		if err != nil {
			return nil, err
		}
		n.Inputs = append(n.Inputs, name)
	}
	if a.Attrs != nil {
		n.Attrs = make(ir.Attrs, len(a.Attrs))
	}
	for _, at := range a.Attrs {
		name, err := decodeTextIdent(at.Name)
		if err != nil {
			return nil, err
		}
		if _, dup := n.Attrs[name]; dup {
			return nil, textErrAt(at.Name.Pos, "duplicate attribute %s", at.Name.Value)
		}
		v, err := at.value()
		if err != nil {
			return nil, err
		}
		n.Attrs[name] = v
	}
	return n, nil
}

func (a *astAttr) value() (ir.Attr, *Error) {
	if t := a.Scalar; t != nil {
		switch t.Type {
		case tokInt:
			v, err := strconv.ParseInt(t.Value, 10, 64)
			if err != nil {
				return ir.Attr{}, textErrAt(t.Pos, "integer %s is out of the int64 range", t.Value)
			}
			return ir.Attr{Kind: ir.AttrInt, Int: v}, nil
		case tokFloat:
			f, err := parseTextFloat32(t.Value)
			if err != nil {
				return ir.Attr{}, textErrAt(t.Pos, "%v", err)
			}
			return ir.Attr{Kind: ir.AttrFloat, Float: f}, nil
		default:
			s, err := textUnquote(*t)
			if err != nil {
				return ir.Attr{}, err
			}
			return ir.Attr{Kind: ir.AttrString, String: s}, nil
		}
	}
	kind := ir.AttrKind(0)
	if a.Kind != nil {
		switch a.Kind.Value {
		case "ints":
			kind = ir.AttrInts
		case "floats":
			kind = ir.AttrFloats
		default:
			return ir.Attr{}, textErrAt(a.Kind.Pos, "unknown list kind %q (want ints or floats)", a.Kind.Value)
		}
	}
	tok := *a.List
	var ints []int64
	var floats []float32
	err := scanTextList(tok, func(off int, isFloat bool, elem string) *Error {
		if kind == 0 {
			kind = ir.AttrInts
			if isFloat {
				kind = ir.AttrFloats
			}
		}
		switch {
		case kind == ir.AttrFloats:
			f, err := parseTextFloat32(elem)
			if err != nil {
				return textErrAt(textPosIn(tok, off), "%v", err)
			}
			floats = append(floats, f)
		case isFloat:
			return textErrAt(textPosIn(tok, off), "float %s in a list of ints (write floats[...] for floats)", elem)
		default:
			v, err := strconv.ParseInt(elem, 10, 64)
			if err != nil {
				return textErrAt(textPosIn(tok, off), "integer %s is out of the int64 range", elem)
			}
			ints = append(ints, v)
		}
		return nil
	})
	if err != nil {
		return ir.Attr{}, err
	}
	switch kind {
	case ir.AttrInts:
		return ir.Attr{Kind: ir.AttrInts, Ints: ints}, nil
	case ir.AttrFloats:
		return ir.Attr{Kind: ir.AttrFloats, Floats: floats}, nil
	}
	return ir.Attr{}, textErrAt(tok.Pos, "empty list needs a kind: write ints[] or floats[]")
}

// decodeTextName returns the name in a %name or @name token.
func decodeTextName(tok lexer.Token) (string, *Error) {
	s := tok.Value[1:]
	if strings.HasPrefix(s, `"`) {
		return textUnquoteAt(tok.Pos, s)
	}
	return s, nil
}

// decodeTextIdent returns an operator or attribute name given bare or quoted.
func decodeTextIdent(tok lexer.Token) (string, *Error) {
	if tok.Type == tokString {
		return textUnquote(tok)
	}
	return tok.Value, nil
}

func textUnquote(tok lexer.Token) (string, *Error) { return textUnquoteAt(tok.Pos, tok.Value) }

func textUnquoteAt(pos lexer.Position, s string) (string, *Error) {
	v, err := strconv.Unquote(s)
	if err != nil {
		return "", textErrAt(pos, "invalid escape in string %s", s)
	}
	return v, nil
}

// parseTextFloat32 reads a float in the text form's syntax (see AppendFloat32), bit-exactly.
func parseTextFloat32(s string) (float32, error) {
	neg := false
	body := s
	if body != "" && (body[0] == '-' || body[0] == '+') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch {
	case body == "inf":
		if neg {
			return float32(math.Inf(-1)), nil
		}
		return float32(math.Inf(1)), nil
	case body == "nan":
		if neg {
			return math.Float32frombits(textCanonicalNegNaN), nil
		}
		return math.Float32frombits(textCanonicalNaN), nil
	case strings.HasPrefix(body, "nan("):
		if len(body) != len(s) {
			return 0, fmt.Errorf("%s: a NaN given by its bits has no sign (the sign is bit 31)", s)
		}
		if !strings.HasPrefix(body, "nan(0x") || !strings.HasSuffix(body, ")") {
			return 0, fmt.Errorf("malformed NaN %s: want nan(0xHEX) with the float32 bits in hex", s)
		}
		bits, err := strconv.ParseUint(body[len("nan(0x"):len(body)-1], 16, 32)
		f := math.Float32frombits(uint32(bits))
		if err != nil || f == f {
			return 0, fmt.Errorf("%s is not a float32 NaN bit pattern", s)
		}
		return f, nil
	}
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return 0, fmt.Errorf("%s is out of the float32 range", s)
	}
	return float32(v), nil
}

// scanTextList calls visit for each element of a bracketed, comma-separated list of numbers (the raw
// text of a List token), with the element's byte offset in the token and whether it is written as
// a float.
func scanTextList(tok lexer.Token, visit func(off int, isFloat bool, elem string) *Error) *Error {
	s := tok.Value
	end := len(s) - 1 // the ']'
	i := textSkipSpace(s, 1)
	if i == end {
		return nil
	}
	for {
		if s[i] == '#' {
			return textErrAt(textPosIn(tok, i), "comments are not allowed inside a list")
		}
		e, isFloat, msg := scanTextNumber(s, i)
		if msg != "" {
			return textErrAt(textPosIn(tok, i), "%s", msg)
		}
		if err := visit(i, isFloat, s[i:e]); err != nil {
			return err
		}
		i = textSkipSpace(s, e)
		if i == end {
			return nil
		}
		if s[i] != ',' {
			return textErrAt(textPosIn(tok, i), "expected ',' or ']' in list, found %q", textFirstRune(s[i:]))
		}
		i = textSkipSpace(s, i+1)
		if i == end {
			return textErrAt(textPosIn(tok, i), "expected a number after ',' in list")
		}
	}
}

func textSkipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func textFirstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

func textIsDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanTextNumber scans a number at s[i:]: [+-]digits, [+-]digits[.digits][e[+-]digits] (a float when
// it has a '.' or an exponent), [+-]inf, [+-]nan, or nan(0xHEX). It returns the end of the number,
// whether it is a float, and a message when s[i:] does not start with a well-formed number.
func scanTextNumber(s string, i int) (end int, isFloat bool, msg string) {
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i < len(s) && isTextIdentStart(s[i]) {
		j := i
		for j < len(s) && isTextIdentByte(s[j]) {
			j++
		}
		switch s[i:j] {
		case "inf":
			return j, true, checkTextNumberEnd(s, start, j)
		case "nan":
			if j < len(s) && s[j] == '(' {
				k := j + 1
				if !strings.HasPrefix(s[k:], "0x") {
					return j, true, "malformed NaN: want nan(0xHEX) with the float32 bits in hex"
				}
				k += 2
				h := k
				for k < len(s) && (textIsDigit(s[k]) || 'a' <= s[k] && s[k] <= 'f' || 'A' <= s[k] && s[k] <= 'F') {
					k++
				}
				if k == h || k >= len(s) || s[k] != ')' {
					return j, true, "malformed NaN: want nan(0xHEX) with the float32 bits in hex"
				}
				j = k + 1
			}
			return j, true, checkTextNumberEnd(s, start, j)
		}
		return i, false, fmt.Sprintf("expected a number, found %q", s[start:j])
	}
	digits := 0
	for i < len(s) && textIsDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		isFloat = true
		i++
		for i < len(s) && textIsDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		if i < len(s) {
			return i, false, fmt.Sprintf("expected a number, found %q", textFirstRune(s[start:]))
		}
		return i, false, "expected a number"
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isFloat = true
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		e := i
		for i < len(s) && textIsDigit(s[i]) {
			i++
		}
		if i == e {
			return i, true, fmt.Sprintf("malformed number %q: exponent has no digits", s[start:i])
		}
	}
	return i, isFloat, checkTextNumberEnd(s, start, i)
}

// checkTextNumberEnd rejects a number glued to letters or digits ("1x", "2.5.1").
func checkTextNumberEnd(s string, start, end int) string {
	if end < len(s) && (isTextIdentByte(s[end]) || s[end] == '.') {
		j := end
		for j < len(s) && (isTextIdentByte(s[j]) || s[j] == '.') {
			j++
		}
		return fmt.Sprintf("malformed number %q", s[start:j])
	}
	return ""
}

// textPosIn is the position of byte offset off inside token tok.
func textPosIn(tok lexer.Token, off int) lexer.Position {
	pos := tok.Pos
	for _, r := range tok.Value[:off] {
		if r == '\n' {
			pos.Line++
			pos.Column = 1
		} else {
			pos.Column++
		}
	}
	pos.Offset += off
	return pos
}

// ---- lexer ----

const (
	tokIdent  lexer.TokenType = -(iota + 2) // operator, attribute and keyword names; f32, ints, ...
	tokName                                 // %name or %"quoted name": a value
	tokLabel                                // @name or @"quoted name": a node name
	tokString                               // "a Go-quoted string"
	tokInt                                  // -12
	tokFloat                                // 1.5, -2e-07, inf, nan, nan(0x7fa00000)
	tokList                                 // [ ... ] with anything but ']' inside
	tokPunct                                // { } ( ) , : =
	tokEOL                                  // the end of a line with tokens on it
)

// textLexerDef is the participle lexer definition of the text form.
type textLexerDef struct{}

func (textLexerDef) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Ident": tokIdent, "Name": tokName, "Label": tokLabel, "String": tokString,
		"Int": tokInt, "Float": tokFloat, "List": tokList, "Punct": tokPunct, "EOL": tokEOL,
	}
}

func (d textLexerDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return d.LexString(filename, string(b))
}

func (textLexerDef) LexString(filename, src string) (lexer.Lexer, error) {
	return &textLexer{src: src, pos: lexer.Position{Filename: filename, Line: 1, Column: 1}, atEOL: true}, nil
}

type textLexer struct {
	src   string
	pos   lexer.Position // of src[pos.Offset]
	atEOL bool           // at the start of the input or after an EOL token: newlines are space
}

// advance moves the position to byte offset to.
func (l *textLexer) advance(to int) {
	seg := l.src[l.pos.Offset:to]
	if nl := strings.Count(seg, "\n"); nl > 0 {
		l.pos.Line += nl
		l.pos.Column = 1 + utf8.RuneCountInString(seg[strings.LastIndexByte(seg, '\n')+1:])
	} else {
		l.pos.Column += utf8.RuneCountInString(seg)
	}
	l.pos.Offset = to
}

func (l *textLexer) Next() (lexer.Token, error) {
	s := l.src
	// Skip white space and comments; a newline is an EOL token unless the line had no tokens.
	i := l.pos.Offset
	for i < len(s) {
		c := s[i]
		if c == '\n' && !l.atEOL {
			l.advance(i)
			eol := lexer.Token{Type: tokEOL, Value: "\n", Pos: l.pos}
			l.advance(i + 1)
			l.atEOL = true
			return eol, nil
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			i++
		} else if c == '#' {
			for i < len(s) && s[i] != '\n' {
				i++
			}
		} else {
			break
		}
	}
	l.advance(i)
	if i == len(s) {
		return lexer.EOFToken(l.pos), nil
	}
	start := l.pos
	l.atEOL = false
	tok := func(t lexer.TokenType, end int) (lexer.Token, error) {
		l.advance(end)
		return lexer.Token{Type: t, Value: s[i:end], Pos: start}, nil
	}
	c := s[i]
	switch {
	case c == '%' || c == '@':
		t := tokName
		if c == '@' {
			t = tokLabel
		}
		j := i + 1
		if j < len(s) && s[j] == '"' {
			e, err := scanTextString(s, j)
			if err != "" {
				return lexer.Token{}, textErrAt(start, "%s", err)
			}
			return tok(t, e)
		}
		for j < len(s) && isTextBareNameByte(s[j]) {
			j++
		}
		if j == i+1 {
			return lexer.Token{}, textErrAt(start, "expected a name or a quoted string after %q", c)
		}
		return tok(t, j)
	case c == '"':
		e, err := scanTextString(s, i)
		if err != "" {
			return lexer.Token{}, textErrAt(start, "%s", err)
		}
		return tok(tokString, e)
	case c == '[':
		k := strings.IndexByte(s[i:], ']')
		if k < 0 {
			return lexer.Token{}, textErrAt(start, "list opened here is never closed with ']'")
		}
		return tok(tokList, i+k+1)
	case textIsDigit(c) || c == '-' || c == '+' || c == '.':
		e, isFloat, msg := scanTextNumber(s, i)
		if msg != "" {
			return lexer.Token{}, textErrAt(start, "%s", msg)
		}
		if isFloat {
			return tok(tokFloat, e)
		}
		return tok(tokInt, e)
	case isTextIdentStart(c):
		j := i
		for j < len(s) && isTextIdentByte(s[j]) {
			j++
		}
		if w := s[i:j]; w == "inf" || w == "nan" {
			e, _, msg := scanTextNumber(s, i)
			if msg != "" {
				return lexer.Token{}, textErrAt(start, "%s", msg)
			}
			return tok(tokFloat, e)
		}
		return tok(tokIdent, j)
	case strings.IndexByte("{}(),:=", c) >= 0:
		return tok(tokPunct, i+1)
	}
	return lexer.Token{}, textErrAt(start, "unexpected character %q", textFirstRune(s[i:]))
}

// scanTextString scans a double-quoted string starting at s[i] == '"' and returns the offset after
// its closing quote, or a message. Escapes are checked when the string is decoded.
func scanTextString(s string, i int) (int, string) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '"':
			return j + 1, ""
		case '\\':
			j++
		case '\n':
			return i, "string is not closed before the end of the line"
		}
	}
	return i, "string is not closed before the end of the line"
}
