package fhe

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// TestSessionRoundTrip runs the fhe mode through the session machinery (handshake over loopback
// TCP, the backend set-up, a batch of two inferences) with the client holding the copy without
// weights: one upload of keys, one encrypted input up and one result down per inference, and the
// client's outputs bitwise equal to the cleartext run; the server learns no output.
func TestSessionRoundTrip(t *testing.T) {
	g, err := golden.RandomPolyNet(2, true)
	if err != nil {
		t.Fatal(err)
	}
	p := compileFHE(t, g, 2)
	full := &sciir.File{Program: p, Backend: BackendName}
	var buf bytes.Buffer
	if err := sciir.Write(&buf, full, true); err != nil {
		t.Fatal(err)
	}
	if full, err = sciir.Unmarshal(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := sciir.Write(&buf, full, false); err != nil {
		t.Fatal(err)
	}
	client, err := sciir.Unmarshal(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var stats [2]Stats
	opts := func(f *sciir.File) *serve.Options {
		return &serve.Options{File: f, NewBackend: func(ctx context.Context, conn *transport.Conn, _ []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
			return NewBackend(ctx, conn, party, r, f.Program, func(party int, s *Stats) { stats[party] = *s })
		}}
	}
	r, _ := p.Ring()
	rng := rand.New(rand.NewPCG(4, 5))
	var batch [][]ring.Tensor
	for range 2 {
		x, err := r.EncodeTensor(g.Inputs[0].Shape, randInput(g, rng), p.Scale)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, []ring.Tensor{x})
	}
	cres, sres, err := serve.RunLocalBatch(context.Background(), opts(full), opts(client), batch)
	if err != nil {
		t.Fatal(err)
	}
	be, _ := cleartext.New(r)
	m, err := vm.New(p, be)
	if err != nil {
		t.Fatal(err)
	}
	for k, in := range batch {
		want, err := m.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for o := range want {
			if got := cres.Batch[k][o]; !got.Revealed || !slices.Equal(got.Value.Data, want[o].Value.Data) {
				t.Errorf("inference %d output %d: session %v, clear %v", k, o, got.Value.Data, want[o].Value.Data)
			}
			if sres.Batch[k][o].Revealed {
				t.Errorf("the server learnt output %d", o)
			}
		}
	}
	c, s := stats[1], stats[0]
	if c.KeyBytes == 0 || c.KeyBytes != s.KeyBytes || c.UploadBytes != s.UploadBytes || c.DownloadBytes != s.DownloadBytes {
		t.Errorf("bytes disagree: client %+v, server %+v", c, s)
	}
	t.Logf("keys %d B once; per inference %d B up, %d B down; keygen %v, encrypt %v, decrypt %v (2 inferences); server %v",
		c.KeyBytes, c.UploadBytes/2, c.DownloadBytes/2, c.KeygenTime, c.EncryptTime, c.DecryptTime, s.EvalTime)
}
