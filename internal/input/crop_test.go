package input

import (
	"encoding/json"
	"image"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/sciir"
)

func TestShorterSideAndCropOffset(t *testing.T) {
	for _, tc := range []struct{ w, h, n, ww, wh int }{
		{500, 375, 256, 341, 256}, // torchvision: int(256 * 500 / 375) = 341
		{375, 500, 256, 256, 341},
		{300, 300, 256, 256, 256},
		{10, 3, 2, 6, 2}, // 6.67 truncated
		{1, 1000, 4, 4, 4000},
	} {
		if w, h := ShorterSideSize(tc.w, tc.h, tc.n); w != tc.ww || h != tc.wh {
			t.Errorf("ShorterSideSize(%d, %d, %d) = %dx%d, want %dx%d", tc.w, tc.h, tc.n, w, h, tc.ww, tc.wh)
		}
	}
	// torchvision: int(round((size - crop) / 2.0)), Python's round taking halves to even.
	for _, tc := range []struct{ size, crop, want int }{{256, 224, 16}, {341, 224, 58}, {343, 224, 60}, {5, 2, 2}, {7, 2, 2}, {4, 4, 0}} {
		if got := CenterCropOffset(tc.size, tc.crop); got != tc.want {
			t.Errorf("CenterCropOffset(%d, %d) = %d, want %d", tc.size, tc.crop, got, tc.want)
		}
	}
}

// ramp is a w x h grey image with pixel (x, y) = x + 10*y.
func ramp(w, h int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Pix[y*img.Stride+x] = uint8(x + 10*y)
		}
	}
	return img
}

func greyPrep(w, h int) *sciir.Preprocess {
	return &sciir.Preprocess{Width: w, Height: h, Channels: 1, Layout: "NCHW", Scale: 1,
		Mean: []float64{0}, Std: []float64{1}, Resize: "bilinear"}
}

func TestResizeShorterCenterCrop(t *testing.T) {
	// 6x4 with shorter side 4: no resize; the centre 2x2 starts at (2, 1).
	p := greyPrep(2, 2)
	p.ResizeShorter, p.CropWidth, p.CropHeight = 4, 2, 2
	x, err := Apply(p, ramp(6, 4))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{12, 13, 22, 23}; !slices.Equal(x, want) {
		t.Errorf("crop: %v, want %v", x, want)
	}

	// 8x4 halved to 4x2 (bilinear at half-pixel centres averages each 2x2 block), then the
	// centre 2x2 (from x = 1).
	p.ResizeShorter = 2
	if x, err = Apply(p, ramp(8, 4)); err != nil {
		t.Fatal(err)
	}
	block := func(bx, by int) float32 { // mean of the 2x2 source block
		return float32(2*bx) + 0.5 + 10*(float32(2*by)+0.5)
	}
	if want := []float32{block(1, 0), block(2, 0), block(1, 1), block(2, 1)}; !slices.Equal(x, want) {
		t.Errorf("resize then crop: %v, want %v", x, want)
	}

	// The crop then resized to the input size: a 2x2 crop to 4x4 equals resizing the crop alone.
	p4 := greyPrep(4, 4)
	p4.ResizeShorter, p4.CropWidth, p4.CropHeight = 4, 2, 2
	got, err := Apply(p4, ramp(6, 4))
	if err != nil {
		t.Fatal(err)
	}
	crop := image.NewGray(image.Rect(0, 0, 2, 2))
	copy(crop.Pix, []uint8{12, 13, 22, 23})
	want, _ := Apply(greyPrep(4, 4), crop)
	if !slices.Equal(got, want) {
		t.Errorf("crop then resize: %v, want %v", got, want)
	}

	// Without the new fields the result is the plain resize of before.
	plain, _ := Apply(greyPrep(3, 2), ramp(6, 4))
	old := greyPrep(3, 2)
	var back sciir.Preprocess
	b, _ := json.Marshal(old)
	if strings.Contains(string(b), "crop") || strings.Contains(string(b), "shorter") {
		t.Errorf("zero fields are written: %s", b)
	}
	json.Unmarshal([]byte(`{"width":3,"height":2,"channels":1,"layout":"NCHW","scale":1,"mean":[0],"std":[1],"resize":"bilinear"}`), &back)
	if x, err := Apply(&back, ramp(6, 4)); err != nil || !slices.Equal(x, plain) {
		t.Errorf("an old program's preprocessing: %v %v, want %v", x, err, plain)
	}
	// Bilinear 6x4 -> 3x2 averages 2x2 blocks too.
	if plain[0] != 5.5 || plain[5] != 29.5 {
		t.Errorf("plain resize %v", plain)
	}
}

func TestCropErrors(t *testing.T) {
	p := greyPrep(4, 4)
	p.CropWidth, p.CropHeight = 5, 4
	if _, err := Apply(p, ramp(4, 4)); err == nil || !strings.Contains(err.Error(), "the 4x4 image is smaller than the centre crop 5x4") {
		t.Errorf("crop too large: %v", err)
	}
	p.ResizeShorter = 3
	if _, err := Apply(p, ramp(4, 4)); err == nil || !strings.Contains(err.Error(), "3x3 after resizing its shorter side to 3") {
		t.Errorf("crop too large after resize: %v", err)
	}
	for name, mutate := range map[string]func(q *sciir.Preprocess){
		"half a crop":       func(q *sciir.Preprocess) { q.CropWidth, q.CropHeight = 4, 0 },
		"negative crop":     func(q *sciir.Preprocess) { q.CropWidth, q.CropHeight = -1, -1 },
		"negative shorter":  func(q *sciir.Preprocess) { q.ResizeShorter = -1 },
		"huge shorter side": func(q *sciir.Preprocess) { q.ResizeShorter = 1 << 20 },
	} {
		q := greyPrep(4, 4)
		mutate(q)
		if q.Check() == nil {
			t.Errorf("%s accepted", name)
		}
	}
	// A resize that would blow up the intermediate image is refused.
	q := greyPrep(4, 4)
	q.ResizeShorter = 1 << 14
	if _, err := Apply(q, ramp(1, 200)); err == nil || !strings.Contains(err.Error(), "gives 16384x3276800") {
		t.Errorf("huge intermediate: %v", err)
	}
}
