package cryptflow

import (
	"fmt"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Program is a compiled secure-inference program: the server's copy (with the weights) or the
// client's (without). It is safe for concurrent use by sessions; do not modify it.
type Program struct {
	f *sciir.File
}

// ReadProgram reads a .sciir file (either copy).
func ReadProgram(path string) (*Program, error) {
	f, err := sciir.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read program: %w", err)
	}
	return &Program{f: f}, nil
}

// ParseProgram decodes a .sciir program from memory (either copy).
func ParseProgram(b []byte) (*Program, error) {
	f, err := sciir.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("parse program: %w", err)
	}
	return &Program{f: f}, nil
}

// Marshal encodes the program: with withWeights the server's copy (it must hold the weights),
// without the client's.
func (p *Program) Marshal(withWeights bool) ([]byte, error) {
	if withWeights && !p.HasWeights() {
		return nil, fmt.Errorf("marshal program %s: it is a client copy, without the weights", p.Name())
	}
	b, err := sciir.Marshal(p.f, withWeights)
	if err != nil {
		return nil, fmt.Errorf("marshal program %s: %w", p.Name(), err)
	}
	return b, nil
}

// ClientCopy returns the client's copy: the same program (same ID) without the weights.
func (p *Program) ClientCopy() (*Program, error) {
	b, err := p.Marshal(false)
	if err != nil {
		return nil, err
	}
	return ParseProgram(b)
}

// WriteFiles writes the server's copy to path (NAME.sciir) and the client's beside it
// (NAME.client.sciir), as athosc -o does, and returns the client copy's path.
func (p *Program) WriteFiles(path string) (clientPath string, err error) {
	if !strings.HasSuffix(path, ".sciir") || strings.HasSuffix(path, ".client.sciir") {
		return "", fmt.Errorf("write program: %s: want a NAME.sciir path for the server's copy (the client's is written beside it)", path)
	}
	clientPath = strings.TrimSuffix(path, ".sciir") + ".client.sciir"
	if err := cli.WriteProgram(path, p.f, true); err != nil {
		return "", err
	}
	if err := cli.WriteProgram(clientPath, p.f, false); err != nil {
		return "", err
	}
	return clientPath, nil
}

// HasWeights reports whether this is the server's copy.
func (p *Program) HasWeights() bool { return p.f.Program.HasWeights() }

// ID is the program's identity (hex SHA-256), the same for both copies; the parties compare it
// before a session.
func (p *Program) ID() string { return p.f.IDString() }

// Name is the program's own name (athosc: the -o file's base name), else its source model's.
func (p *Program) Name() string {
	if p.f.Meta.Name != "" {
		return p.f.Meta.Name
	}
	return p.f.Meta.Source
}

// Backend is the two-party backend the program records (auto, sciot, scihe).
func (p *Program) Backend() string {
	if p.f.Backend == "" {
		return sciir.DefaultBackend
	}
	return p.f.Backend
}

// Bits and Scale are the ring bitwidth l and the fixed-point scale s.
func (p *Program) Bits() int  { return p.f.Program.Bits }
func (p *Program) Scale() int { return p.f.Program.Scale }

// InputShape is the shape of the program's (first) input.
func (p *Program) InputShape() []int {
	if len(p.f.Program.Inputs) == 0 {
		return nil
	}
	return p.f.Program.Tensors[p.f.Program.Inputs[0].Tensor].Shape.Clone()
}

// Classes are the class names the program records (CompileOptions.Classes or athosc --classes,
// else the class folders of an image validation set), or nil.
func (p *Program) Classes() []string {
	return p.f.Meta.ClassNames()
}

// ReadInput reads an input for the program from a file: a .npy array of the input's shape (or
// without its leading 1-dimensions), or a PNG/JPEG image when the program records image
// preprocessing, preprocessed as the validation images were.
func (p *Program) ReadInput(path string) ([]float32, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	x, err := input.Read(path, p.InputShape(), p.f.Meta.Preprocess)
	if err != nil {
		return nil, fmt.Errorf("read input %s: %w", path, err)
	}
	return x, nil
}
