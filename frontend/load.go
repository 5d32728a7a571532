// Package frontend loads a model file of any supported format into HLIL (package ir): a
// TensorFlow frozen GraphDef (package frontend/tf) or an ONNX model (package frontend/onnx). The
// format is detected from the file's bytes, not its name. Both front ends take the same cutting
// options: the graph inputs (any tensor, with an optional shape), the graph outputs, and the
// batch that replaces an unknown first dimension.
package frontend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/frontend/tf"
	"github.com/cryptflow-go/cryptflow/internal/readfile"
	"github.com/cryptflow-go/cryptflow/ir"
)

// Format is a model file format.
type Format string

// The formats Load reads.
const (
	ONNX Format = "ONNX"
	TF   Format = "TensorFlow GraphDef"
)

// Input is one chosen graph input: a tensor name and, optionally, its shape.
type Input struct {
	// Name is a TF tensor ("node" or "node:k") or an ONNX tensor name.
	Name string
	// Shape is nil for the declared shape; a -1 first dimension is Options.Batch.
	Shape []int
}

// Options choose the part of the model to import.
type Options struct {
	// Inputs become the graph's inputs, in this order; the graph is cut there (whatever computes
	// them is dropped). Inputs the outputs need that are not listed keep their declarations.
	Inputs []Input
	// Outputs become the graph's outputs; empty means the model's own outputs.
	Outputs []string
	// Batch replaces an unknown (-1, symbolic) first dimension of an input. Zero means 1.
	Batch int
}

// Detect returns the format of the model at path from its bytes. A directory is a TF
// SavedModel (refused by Load with a note on freezing it) or an error.
func Detect(path string) (Format, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return TF, nil // tf.Load explains SavedModel directories and refuses others
	}
	b, err := readfile.ReadFile(context.Background(), path)
	if err != nil {
		return "", err
	}
	if what, hint := NotAModel(b); what != "" {
		return "", fmt.Errorf("%w: %s is %s, not a model: athosc takes an ONNX model (.onnx) or a TensorFlow frozen graph (.pb)%s",
			ErrNotAModel, path, what, hint)
	}
	return DetectBytes(b), nil
}

// ErrNotAModel is wrapped by the error of Detect (and Load) for a file that is recognisably
// something else: an image, a .npy array, a .sciir program, an archive, text.
var ErrNotAModel = errors.New("not a model file")

// NotAModel recognises the files a user may give in place of a model by their first bytes, and
// returns what the file is and a hint where it belongs ("" when it may be a model).
func NotAModel(b []byte) (what, hint string) {
	has := func(prefix string) bool { return strings.HasPrefix(string(b), prefix) }
	const image = "; images go in a --validate DIR (one subfolder per class) or to 'scirun --input'"
	switch {
	case has("\x89PNG\r\n\x1a\n"):
		return "a PNG image", image
	case has("\xff\xd8\xff"):
		return "a JPEG image", image
	case has("GIF87a"), has("GIF89a"):
		return "a GIF image", image
	case has("\x93NUMPY"):
		return "a .npy array", "; inputs go in a --validate DIR or to 'scirun --input'"
	case has("\x89SCI\r\n\x1a\n"):
		return "a .sciir program (already compiled)", "; run it with scirun, or read it with 'athosc disasm'"
	case has("PK\x03\x04"):
		return "a zip archive (a PyTorch .pt/.pth checkpoint?)", "; export PyTorch models with torch.onnx.export"
	case has("\x1f\x8b"):
		return "a gzip file", "; unpack it first (MNIST .gz files are data: 'mkdata mnist' reads them)"
	case has("%PDF"):
		return "a PDF document", ""
	case len(b) > 0 && isText(b[:min(len(b), 4096)]):
		return "a text file", " (a text-format .pbtxt or .json is not read: convert it to the binary format)"
	}
	return "", ""
}

// isText reports whether b looks like UTF-8 text (printable, tabs and newlines). Binary
// protobufs start with a field tag byte that is a control character or a high byte soon.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
		if c == 0x7f {
			return false
		}
	}
	return true
}

// DetectBytes returns the format of a model's bytes: a binary GraphDef is TF, anything else is
// taken for ONNX (whose decoder reports what is wrong with it).
func DetectBytes(b []byte) Format {
	if tf.LooksLikeGraphDef(b) {
		return TF
	}
	return ONNX
}

// Load reads the model at path, detects its format and imports it with opts.
func Load(path string, opts Options) (*ir.Graph, error) {
	format, err := Detect(path)
	if err != nil {
		return nil, err
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("batch %d is negative", opts.Batch)
	}
	switch format {
	case TF:
		o := tf.Options{Outputs: opts.Outputs, Batch: opts.Batch}
		for _, in := range opts.Inputs {
			o.Inputs = append(o.Inputs, tf.Input{Name: in.Name, Shape: in.Shape})
		}
		return tf.Load(path, o)
	default:
		o := onnx.Options{Outputs: opts.Outputs, Batch: opts.Batch}
		for _, in := range opts.Inputs {
			o.Inputs = append(o.Inputs, onnx.Input{Name: in.Name, Shape: in.Shape})
		}
		g, err := onnx.Load(path, o)
		if err != nil {
			// A .pb that starts as a GraphDef and does not parse is a truncated or corrupt
			// TF model, not a malformed ONNX one.
			if b, rerr := readfile.ReadFile(context.Background(), path); rerr == nil && tf.StartsLikeGraphDef(b) {
				_, tfErr := tf.ReadGraphDef(path)
				return nil, fmt.Errorf("%s starts as a TensorFlow GraphDef but does not parse as one (a truncated or corrupt .pb?): %v", path, tfErr)
			}
			// A TF SavedModel's saved_model.pb is not a GraphDef; let tf say what it is.
			if _, tfErr := tf.ReadGraphDef(path); tfErr != nil && errors.Is(tfErr, tf.ErrUnsupported) && strings.Contains(tfErr.Error(), "SavedModel") {
				return nil, tfErr
			}
			return nil, err
		}
		return g, nil
	}
}

// ParseInputs parses a command-line list of inputs: NAME or NAME:[D0,D1,...] items separated by
// commas outside brackets, e.g. "Mfcc:[1,49,10]" or "a:[-1,3,32,32],b". A shape must be
// bracketed here (bare "NAME:1,49,10" would be ambiguous with the list's commas); "NAME:k"
// names output k of a TF node.
func ParseInputs(list string) ([]Input, error) {
	var out []Input
	for _, item := range splitTop(list) {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("inputs %q: empty item", list)
		}
		if i := strings.LastIndexByte(item, ':'); i < 0 || !strings.HasPrefix(strings.TrimSpace(item[i+1:]), "[") {
			// No shape: a name, or a name with an output index. A bare number here comes from
			// an unbracketed shape split at its commas.
			if isNumber(item) {
				return nil, fmt.Errorf("inputs %q: %q is not a tensor name; write shapes in brackets, e.g. NAME:[1,49,10]", list, item)
			}
		}
		in, err := tf.ParseInput(item)
		if err != nil {
			return nil, err
		}
		if in.Shape != nil && !strings.Contains(item, "[") {
			return nil, fmt.Errorf("inputs %q: write the shape of %s in brackets, e.g. %s:[1,49,10]", list, in.Name, in.Name)
		}
		out = append(out, Input{Name: in.Name, Shape: in.Shape})
	}
	return out, nil
}

// ParseOutputs parses a comma-separated list of output names.
func ParseOutputs(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("outputs %q: empty name", list)
		}
		out = append(out, s)
	}
	return out, nil
}

// splitTop splits s at commas that are not inside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
