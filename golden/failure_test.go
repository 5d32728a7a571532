package golden

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// TestPeerFailureMidInference cancels the client in the middle of an inference: both parties'
// runs must end with an error promptly (the failing party aborts its connections, as the runtime
// does), not hang until a timeout.
func TestPeerFailureMidInference(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
	g := loadModel(t, filepath.Join(dir, "model.onnx"))
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := compileTuned(t, g, ds.Samples, -1)
	x := encodeInputs(t, prog.server, inputsOf(ds.Samples[:1]))[0]
	r := ring.Must(prog.server.Bits)
	// A long timeout: the test fails if either party waits for it.
	c0, c1 := transport.Pipe(transport.Options{Timeout: 5 * time.Minute})
	defer c0.Close()
	defer c1.Close()
	ctx := context.Background()
	var b0, b1 *sci.Backend
	if e0, e1 := testenv.Both(func() (err error) { b0, err = sci.New(ctx, c0, 0, r, sci.Options{}); return },
		func() (err error) { b1, err = sci.New(ctx, c1, 1, r, sci.Options{}); return }); e0 != nil || e1 != nil {
		t.Fatal(e0, e1)
	}
	m0, err := vm.New(prog.server, b0)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := vm.New(prog.client, b1)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	steps := 0
	m1.Observe = func(int, ring.Tensor) {
		if steps++; steps == 4 {
			cancel()
		}
	}
	start := time.Now()
	// As the runtime does, a party whose run fails aborts its backend's connections.
	e0, e1 := testenv.Both(func() error {
		_, err := m0.Run(ctx, []ring.Tensor{{Shape: x.Shape}})
		if err != nil {
			b0.Abort(err.Error())
		}
		return err
	}, func() error {
		_, err := m1.Run(cctx, []ring.Tensor{x})
		if err != nil {
			b1.Abort(err.Error())
		}
		return err
	})
	if e0 == nil || e1 == nil {
		t.Fatalf("server: %v; client: %v (both must fail)", e0, e1)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the failure took %v to surface", d)
	}
	t.Logf("server: %v\nclient: %v", e0, e1)
	if b0.Err() == nil || b1.Err() == nil {
		t.Fatal("a backend is still usable after the failure")
	}
}
