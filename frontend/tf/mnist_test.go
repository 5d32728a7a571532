package tf

import (
	"math"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/internal/testsets"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// TestMNISTAccuracy runs the MNIST classifiers of ../shared/testdata/tf over MNIST t10k (pixels
// scaled to [0,1]) through the float interpreter and checks the accuracies their meta.json
// records from the independent numpy evaluation; in -short mode only the first 1000 images are
// used and the accuracy must be within 2 points. The autoencoder is checked by its mean squared
// reconstruction error on the first 1000 images (0.0114 in meta.json).
func TestMNISTAccuracy(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	shared := testenv.SharedTestdata(t)
	n := 10000
	if testing.Short() {
		n = 1000
	}
	samples := testsets.MNIST(t, shared, 0, n, true)
	cases := []struct {
		model   string
		batch   int // the batch the model runs with (utensor's is fixed at 10)
		output  string
		correct int // out of 10000, from meta.json
	}{
		{"tfe_mnist_cnn", 100, "fc2/add", 9870},
		{"utensor_simple_mnist", 10, "OuputLayer/logits", 9590},
		{"tf2onnx_fc_layers", 100, "output", 9548},
		{"arm_simple_mnist_softmax", 100, "Softmax", 8890},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			var m sharedModel
			for _, s := range sharedModels {
				if s.dir == c.model {
					m = s
				}
			}
			m.outputs = []string{c.output}
			g := loadShared(t, root, m, c.batch)
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			correct := 0
			in := g.Inputs[0]
			x := &ir.Tensor{Shape: in.Shape, Data: make([]float32, in.Shape.Size())}
			per := 784
			for b := 0; b+c.batch <= len(samples); b += c.batch {
				for i := 0; i < c.batch; i++ {
					copy(x.Data[i*per:], samples[b+i].Input)
				}
				out, err := it.Run(map[string]*ir.Tensor{in.Name: x})
				if err != nil {
					t.Fatal(err)
				}
				y := out[c.output].Data
				k := len(y) / c.batch
				for i := 0; i < c.batch; i++ {
					if argmax(y[i*k:(i+1)*k]) == samples[b+i].Label {
						correct++
					}
				}
			}
			acc := float64(correct) / float64(len(samples))
			want := float64(c.correct) / 10000
			t.Logf("%s on t10k[:%d]: %d correct = %.2f %% (meta.json %.2f %% on all 10000) in %v", c.model, len(samples), correct, 100*acc,
				100*want, time.Since(start).Round(time.Millisecond))
			if len(samples) == 10000 && correct != c.correct {
				t.Errorf("%d correct, want %d", correct, c.correct)
			}
			if math.Abs(acc-want) > 0.02 {
				t.Errorf("accuracy %.2f %% is more than 2 points from %.2f %%", 100*acc, 100*want)
			}
		})
	}
	t.Run("tf2onnx_ae0", func(t *testing.T) {
		var m sharedModel
		for _, s := range sharedModels {
			if s.dir == "tf2onnx_ae0" {
				m = s
			}
		}
		g := loadShared(t, root, m, 100)
		it, err := interp.New(g)
		if err != nil {
			t.Fatal(err)
		}
		k := min(1000, len(samples))
		sum := 0.0
		x := &ir.Tensor{Shape: g.Inputs[0].Shape, Data: make([]float32, 100*784)}
		for b := 0; b+100 <= k; b += 100 {
			for i := 0; i < 100; i++ {
				copy(x.Data[i*784:], samples[b+i].Input)
			}
			out, err := it.Run(map[string]*ir.Tensor{g.Inputs[0].Name: x})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range out["output"].Data {
				d := float64(v) - float64(x.Data[i])
				sum += d * d
			}
		}
		mse := sum / float64(k*784)
		t.Logf("autoencoder reconstruction MSE on t10k[:%d]: %.4f (meta.json 0.0114)", k, mse)
		if math.Abs(mse-0.0114) > 0.0005 {
			t.Errorf("MSE %.4f, want 0.0114", mse)
		}
	})
}

// argmax returns the index of the largest element (the first on ties).
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
