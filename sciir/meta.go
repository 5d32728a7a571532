package sciir

import (
	"github.com/cryptflow-go/cryptflow/ir/fixed"

	"fmt"
	"math"
	"strings"
)

// Meta is the metadata section of a program file: where the program came from and how it was
// tuned. It is public (part of the program ID) and stored as JSON, so readers ignore fields they do
// not know.
type Meta struct {
	Compiler     string      `json:"compiler,omitempty"`      // e.g. "athosc (cryptflow-go)"
	Name         string      `json:"name,omitempty"`          // the program's own name (athosc: the -o file's base name without .sciir)
	Source       string      `json:"source,omitempty"`        // the model file's base name
	SourceSHA256 string      `json:"source_sha256,omitempty"` // hex SHA-256 of the model file
	Preprocess   *Preprocess `json:"preprocess,omitempty"`    // how raw inputs become the model input
	Autotune     *Autotune   `json:"autotune,omitempty"`      // how l and s were chosen
	Passes       []string    `json:"passes,omitempty"`        // clean-up and peephole actions taken
	InputRange   *Range      `json:"input_range,omitempty"`   // the input values the program was validated on
	Net          string      `json:"net,omitempty"`           // backend auto: the link the linear layers were planned for ("lan", "wan" or BANDWIDTH,RTT; netmodel.Parse)
	// Classes names the classes of the model's output: Classes[k] is class k (athosc --classes,
	// the validation folder's classes.txt, or its sorted class subfolders). Programs written
	// before this field have none (ClassNames falls back to Preprocess.ClassDirs).
	Classes []string `json:"classes,omitempty"`
	// FHE holds the fhe mode's encryption parameters; sciir.Write fills it from the program and
	// the reader puts it back into fixed.Program.FHE.
	FHE *fixed.FHEParams `json:"fhe,omitempty"`
	// Inputs and Outputs describe the program's inputs and outputs beyond their shapes: the
	// element type the model declares for an input and the quantization the client applies to
	// it, and the dequantization of a quantized output (iometa.go). Only entries with something
	// to say are listed; programs written before these fields have none.
	Inputs  []InputInfo  `json:"inputs,omitempty"`
	Outputs []OutputInfo `json:"outputs,omitempty"`
}

// ClassNames returns the class names the program records (index k names class k), or nil.
func (m *Meta) ClassNames() []string {
	if len(m.Classes) > 0 {
		return m.Classes
	}
	if m.Preprocess != nil {
		return m.Preprocess.ClassDirs
	}
	return nil
}

// Range is a closed interval of real values [Min, Max].
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Contains reports whether v lies in [Min, Max].
func (r Range) Contains(v float64) bool { return v >= r.Min && v <= r.Max }

// Preprocess records how a client turns an image into the model's input tensor, so that it
// preprocesses exactly as the validation images were during autotuning.
type Preprocess struct {
	Width     int       `json:"width"`                // resize target (pixels)
	Height    int       `json:"height"`               // resize target (pixels)
	Channels  int       `json:"channels"`             // 1 (grey) or 3 (RGB)
	Layout    string    `json:"layout"`               // "NCHW" or "NHWC"
	Scale     float64   `json:"scale"`                // pixel value multiplier applied first (e.g. 1/255)
	Mean      []float64 `json:"mean"`                 // per channel, subtracted after scaling
	Std       []float64 `json:"std"`                  // per channel, divided by after subtracting the mean
	Resize    string    `json:"resize"`               // "bilinear" or "nearest"
	ClassDirs []string  `json:"class_dirs,omitempty"` // class index -> subfolder name, when known

	// ImageNet-style preprocessing (torchvision Resize(N) then CenterCrop): when set, the image
	// is first resized so that its shorter side is ResizeShorter pixels (aspect ratio kept, the
	// longer side truncated as torchvision does), then its centre CropWidth x CropHeight is cut
	// out, and only then is it resized to Width x Height (a no-op when the crop has that size).
	// Programs written before these fields existed have them zero and behave as before.
	ResizeShorter int `json:"resize_shorter,omitempty"` // 0: no shorter-side resize
	CropWidth     int `json:"crop_width,omitempty"`     // 0 (with CropHeight 0): no centre crop
	CropHeight    int `json:"crop_height,omitempty"`
}

// Check reports whether the preprocessing description is usable.
func (p *Preprocess) Check() error {
	if p.Width < 1 || p.Height < 1 || p.Width > 1<<14 || p.Height > 1<<14 {
		return fmt.Errorf("preprocess: size %dx%d out of range", p.Width, p.Height)
	}
	if p.Channels != 1 && p.Channels != 3 {
		return fmt.Errorf("preprocess: %d channels (want 1 or 3)", p.Channels)
	}
	if p.Layout != "NCHW" && p.Layout != "NHWC" {
		return fmt.Errorf("preprocess: layout %q (want NCHW or NHWC)", p.Layout)
	}
	if len(p.Mean) != p.Channels || len(p.Std) != p.Channels {
		return fmt.Errorf("preprocess: %d means and %d stds for %d channels", len(p.Mean), len(p.Std), p.Channels)
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(p.Scale) {
		return fmt.Errorf("preprocess: pixel scale %g is not finite", p.Scale)
	}
	for i := range p.Std {
		if p.Std[i] == 0 || !finite(p.Std[i]) || !finite(p.Mean[i]) {
			return fmt.Errorf("preprocess: channel %d has mean %g and std %g (want finite values, std not 0)", i, p.Mean[i], p.Std[i])
		}
	}
	if p.Resize != "bilinear" && p.Resize != "nearest" {
		return fmt.Errorf("preprocess: resize %q (want bilinear or nearest)", p.Resize)
	}
	if p.ResizeShorter < 0 || p.ResizeShorter > 1<<14 {
		return fmt.Errorf("preprocess: shorter-side resize to %d pixels out of range (0 for none, up to %d)", p.ResizeShorter, 1<<14)
	}
	if (p.CropWidth == 0) != (p.CropHeight == 0) || p.CropWidth < 0 || p.CropHeight < 0 || p.CropWidth > 1<<14 || p.CropHeight > 1<<14 {
		return fmt.Errorf("preprocess: centre crop %dx%d out of range (both 0 for none, or both positive)", p.CropWidth, p.CropHeight)
	}
	return nil
}

// Shape is the model input shape the preprocessing produces.
func (p *Preprocess) Shape() []int {
	if p.Layout == "NHWC" {
		return []int{1, p.Height, p.Width, p.Channels}
	}
	return []int{1, p.Channels, p.Height, p.Width}
}

// Autotune records the autotuner's sweep and choice.
type Autotune struct {
	Validation string       `json:"validation,omitempty"` // the folder (base name)
	Samples    int          `json:"samples"`
	Labelled   bool         `json:"labelled"`
	Headroom   int          `json:"headroom"`
	Bits       int          `json:"bits"`             // chosen l
	Scale      int          `json:"scale"`            // chosen s
	Pinned     string       `json:"pinned,omitempty"` // "bitwidth", "scale", or both, when set by hand
	FloatAcc   float64      `json:"float_accuracy"`   // float model accuracy on the validation set (-1 without labels)
	Rows       []TuneRecord `json:"rows"`
	Reason     string       `json:"reason,omitempty"` // why the chosen row won (the autotuner's selection rule)
}

// TuneRecord is one row of the autotune table.
type TuneRecord struct {
	Bits      int     `json:"bits"`
	Scale     int     `json:"scale"`
	Accuracy  float64 `json:"accuracy"`  // fraction of correct top-1 (-1 without labels)
	Agreement float64 `json:"agreement"` // fraction of top-1 equal to the float model's
	BitsUsed  int     `json:"bits_used"` // bits needed by the largest magnitude (with sign)
	Overflow  bool    `json:"overflow,omitempty"`
}

func (m *Meta) summary() string {
	var b strings.Builder
	if m.Source != "" {
		fmt.Fprintf(&b, "source %s", m.Source)
		if m.SourceSHA256 != "" {
			fmt.Fprintf(&b, " (sha256 %s)", m.SourceSHA256)
		}
		b.WriteByte('\n')
	}
	if m.Compiler != "" {
		fmt.Fprintf(&b, "compiler %s\n", m.Compiler)
	}
	if m.Net != "" {
		fmt.Fprintf(&b, "planned for net %s\n", m.Net)
	}
	if p := m.Preprocess; p != nil {
		fmt.Fprintf(&b, "preprocess %dx%d %dch %s scale=%g mean=%v std=%v resize=%s",
			p.Width, p.Height, p.Channels, p.Layout, p.Scale, p.Mean, p.Std, p.Resize)
		if p.ResizeShorter > 0 {
			fmt.Fprintf(&b, " resize-shorter=%d", p.ResizeShorter)
		}
		if p.CropWidth > 0 {
			fmt.Fprintf(&b, " center-crop=%dx%d", p.CropWidth, p.CropHeight)
		}
		b.WriteByte('\n')
	}
	if a := m.Autotune; a != nil {
		fmt.Fprintf(&b, "autotune on %d samples (labelled=%v, headroom %d): chose l=%d s=%d", a.Samples, a.Labelled, a.Headroom, a.Bits, a.Scale)
		if a.Pinned != "" {
			fmt.Fprintf(&b, " (pinned: %s)", a.Pinned)
		}
		b.WriteByte('\n')
		if len(a.Rows) > 0 {
			fmt.Fprintf(&b, "  %5s %5s %9s %9s %9s\n", "bits", "scale", "accuracy", "agreement", "bits used")
			for _, r := range a.Rows {
				acc := "-"
				if r.Accuracy >= 0 {
					acc = fmt.Sprintf("%.2f%%", 100*r.Accuracy)
				}
				fmt.Fprintf(&b, "  %5d %5d %9s %8.2f%% %9d\n", r.Bits, r.Scale, acc, 100*r.Agreement, r.BitsUsed)
			}
		}
		if a.Reason != "" {
			fmt.Fprintf(&b, "  why: %s\n", a.Reason)
		}
	}
	if len(m.Classes) > 0 {
		fmt.Fprintf(&b, "classes %d: %s\n", len(m.Classes), strings.Join(m.Classes, ", "))
	}
	for _, in := range m.Inputs {
		fmt.Fprintf(&b, "input %s:", in.Name)
		if in.Type != "" {
			fmt.Fprintf(&b, " declared %s", in.Type)
		}
		if q := in.Quantize; q != nil {
			fmt.Fprintf(&b, " quantized by the client to %s (scale %g, zero point %d)", q.Type, q.Scale, q.ZeroPoint)
		}
		b.WriteByte('\n')
	}
	for _, o := range m.Outputs {
		if q := o.Dequantize; q != nil {
			fmt.Fprintf(&b, "output %s: %s dequantized by the receiver (scale %g, zero point %d)\n", o.Name, q.Type, q.Scale, q.ZeroPoint)
		}
	}
	for _, p := range m.Passes {
		fmt.Fprintf(&b, "pass: %s\n", p)
	}
	return b.String()
}
