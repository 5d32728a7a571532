package input

import (
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // register JPEG decoding for LoadImage
	_ "image/png"  // register PNG decoding for LoadImage
	"math"

	"github.com/cryptflow-go/cryptflow/internal/readfile"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// DefaultPreprocess returns the preprocessing for a model input of the given shape ([1,C,H,W] for
// NCHW or [1,H,W,C] for NHWC, C = 1 or 3): resize bilinearly to the input's size, scale pixels to
// 0..1, mean 0 and std 1 per channel.
func DefaultPreprocess(shape []int, layout string) (*sciir.Preprocess, error) {
	if len(shape) != 4 || shape[0] != 1 {
		return nil, fmt.Errorf("preprocess: model input shape %v is not an image batch of one ([1,C,H,W] or [1,H,W,C])", shape)
	}
	p := &sciir.Preprocess{Layout: layout, Scale: 1.0 / 255, Resize: "bilinear"}
	switch layout {
	case "NCHW":
		p.Channels, p.Height, p.Width = shape[1], shape[2], shape[3]
	case "NHWC":
		p.Height, p.Width, p.Channels = shape[1], shape[2], shape[3]
	default:
		return nil, fmt.Errorf("preprocess: layout %q (want NCHW or NHWC)", layout)
	}
	p.Mean = make([]float64, p.Channels)
	p.Std = make([]float64, p.Channels)
	for i := range p.Std {
		p.Std[i] = 1
	}
	return p, p.Check()
}

// LoadImage decodes a PNG or JPEG image and preprocesses it as p says.
func LoadImage(p *sciir.Preprocess, path string) ([]float32, error) {
	f, err := readfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("decode image %s: %w", path, err)
	}
	x, err := Apply(p, img)
	if err != nil {
		return nil, fmt.Errorf("preprocess %s: %w", path, err)
	}
	return x, nil
}

// maxPixels bounds the pixels of a decoded image and of every intermediate resize.
const maxPixels = 1 << 26

// Apply turns an image into the model input: convert to grey (ITU-R 601 luma, as image/color
// does) or RGB; when p.ResizeShorter is set, resize so the shorter side has that many pixels;
// when p.CropWidth/CropHeight are set, cut out the centre crop; resize to Width x Height (bilinear
// with half-pixel centres, or nearest; a no-op at that size already); then per channel
// (pixel*Scale - Mean[c]) / Std[c], laid out as Layout.
func Apply(p *sciir.Preprocess, img image.Image) ([]float32, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	b := img.Bounds()
	sw, sh := b.Dx(), b.Dy()
	if sw < 1 || sh < 1 {
		return nil, fmt.Errorf("empty image")
	}
	if sw*sh > maxPixels {
		return nil, fmt.Errorf("image of %dx%d pixels is too large", sw, sh)
	}
	c := p.Channels
	// Source planes as 0..255 floats.
	src := make([]float64, c*sw*sh)
	for y := 0; y < sh; y++ {
		for x := 0; x < sw; x++ {
			px := img.At(b.Min.X+x, b.Min.Y+y)
			if c == 1 {
				g := color.GrayModel.Convert(px).(color.Gray)
				src[y*sw+x] = float64(g.Y)
				continue
			}
			r, gg, bb, _ := px.RGBA()
			src[0*sw*sh+y*sw+x] = float64(r >> 8)
			src[1*sw*sh+y*sw+x] = float64(gg >> 8)
			src[2*sw*sh+y*sw+x] = float64(bb >> 8)
		}
	}
	nearest := p.Resize == "nearest"
	if p.ResizeShorter > 0 {
		rw, rh := ShorterSideSize(sw, sh, p.ResizeShorter)
		if rw < 1 || rh < 1 || rw*rh > maxPixels {
			return nil, fmt.Errorf("resizing the %dx%d image's shorter side to %d pixels gives %dx%d", sw, sh, p.ResizeShorter, rw, rh)
		}
		src, sw, sh = resizePlanes(src, c, sw, sh, rw, rh, nearest), rw, rh
	}
	if p.CropWidth > 0 {
		if p.CropWidth > sw || p.CropHeight > sh {
			what := fmt.Sprintf("the %dx%d image", sw, sh)
			if p.ResizeShorter > 0 {
				what = fmt.Sprintf("the image, %dx%d after resizing its shorter side to %d,", sw, sh, p.ResizeShorter)
			}
			return nil, fmt.Errorf("%s is smaller than the centre crop %dx%d", what, p.CropWidth, p.CropHeight)
		}
		left, top := CenterCropOffset(sw, p.CropWidth), CenterCropOffset(sh, p.CropHeight)
		src = cropPlanes(src, c, sw, sh, left, top, p.CropWidth, p.CropHeight)
		sw, sh = p.CropWidth, p.CropHeight
	}
	W, H := p.Width, p.Height
	src = resizePlanes(src, c, sw, sh, W, H, nearest)
	out := make([]float32, c*W*H)
	for ch := 0; ch < c; ch++ {
		plane := src[ch*W*H : (ch+1)*W*H]
		for i, v := range plane {
			f := float32((v*p.Scale - p.Mean[ch]) / p.Std[ch])
			if p.Layout == "NHWC" {
				out[i*c+ch] = f
			} else {
				out[ch*W*H+i] = f
			}
		}
	}
	return out, nil
}

// ShorterSideSize is the size of a w x h image resized so that its shorter side is n pixels,
// computed as torchvision's Resize(n) does: the longer side is n*long/short, truncated.
func ShorterSideSize(w, h, n int) (int, int) {
	if w <= h {
		return n, int(float64(n) * float64(h) / float64(w))
	}
	return int(float64(n) * float64(w) / float64(h)), n
}

// CenterCropOffset is where a centre crop of length crop starts in a side of length size, as
// torchvision's CenterCrop computes it: round((size - crop) / 2), halves rounded to even.
func CenterCropOffset(size, crop int) int {
	return int(math.RoundToEven(float64(size-crop) / 2))
}

// resizePlanes resamples c planes of sw x sh to W x H (returning src itself when the size is
// unchanged).
func resizePlanes(src []float64, c, sw, sh, W, H int, nearest bool) []float64 {
	if sw == W && sh == H {
		return src
	}
	out := make([]float64, c*W*H)
	for ch := 0; ch < c; ch++ {
		plane := src[ch*sw*sh : (ch+1)*sw*sh]
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				out[ch*W*H+y*W+x] = sample(plane, sw, sh, x, y, W, H, nearest)
			}
		}
	}
	return out
}

// cropPlanes cuts the cw x ch rectangle at (left, top) out of c planes of sw x sh.
func cropPlanes(src []float64, c, sw, sh, left, top, cw, ch int) []float64 {
	out := make([]float64, 0, c*cw*ch)
	for k := 0; k < c; k++ {
		plane := src[k*sw*sh : (k+1)*sw*sh]
		for y := top; y < top+ch; y++ {
			out = append(out, plane[y*sw+left:y*sw+left+cw]...)
		}
	}
	return out
}

// sample reads the source plane at the position that output pixel (x, y) of a W x H image maps to.
func sample(plane []float64, sw, sh, x, y, W, H int, nearest bool) float64 {
	if sw == W && sh == H {
		return plane[y*sw+x]
	}
	fx := (float64(x)+0.5)*float64(sw)/float64(W) - 0.5
	fy := (float64(y)+0.5)*float64(sh)/float64(H) - 0.5
	if nearest {
		ix := min(max(int(math.Floor(fx+0.5)), 0), sw-1)
		iy := min(max(int(math.Floor(fy+0.5)), 0), sh-1)
		return plane[iy*sw+ix]
	}
	fx = min(max(fx, 0), float64(sw-1))
	fy = min(max(fy, 0), float64(sh-1))
	x0, y0 := int(fx), int(fy)
	x1, y1 := min(x0+1, sw-1), min(y0+1, sh-1)
	ax, ay := fx-float64(x0), fy-float64(y0)
	top := plane[y0*sw+x0]*(1-ax) + plane[y0*sw+x1]*ax
	bot := plane[y1*sw+x0]*(1-ax) + plane[y1*sw+x1]*ax
	return top*(1-ay) + bot*ay
}
