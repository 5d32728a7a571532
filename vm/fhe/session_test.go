package fhe

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// TestSessionRoundTrip runs the fhe mode through the session machinery (handshake over loopback
// TCP, the backend set-up, a batch of three inferences) with the client holding the copy without
// weights, with one round trip per inference, with the batch sharing one ciphertext, and in
// groups of two (a full and a partial one): one upload of keys; one encrypted input up and one
// result down per round trip (the shared run moves a third of the bytes); the client's outputs bitwise equal to the cleartext run; the
// server learns no output. Twice: a random polynomial MLP, and golden.ConvRepPolyCNN, whose input
// goes up as two vectors (its convolution representation, which the client derives without the
// weights).
func TestSessionRoundTrip(t *testing.T) {
	t.Run("mlp", func(t *testing.T) {
		g, err := golden.RandomPolyNet(2, true)
		if err != nil {
			t.Fatal(err)
		}
		sessionRoundTrip(t, g, 2, 1)
	})
	t.Run("conv-rep", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a minute on the loaded VM; TestEncryptedEqualsClear covers the convolution representation under -short")
		}
		g, err := golden.ConvRepPolyCNN(101)
		if err != nil {
			t.Fatal(err)
		}
		sessionRoundTrip(t, g, 101, 2)
	})
}

func sessionRoundTrip(t *testing.T, g *ir.Graph, seed uint64, vectors int) {
	p := compileFHE(t, g, seed)
	if l, err := NewLayout(p); err != nil || l.Vectors(0) != vectors {
		t.Fatalf("the input goes up as %d vectors (%v), want %d", l.Vectors(0), err, vectors)
	}
	full := &sciir.File{Program: p, Backend: BackendName}
	var buf bytes.Buffer
	if err := sciir.Write(&buf, full, true); err != nil {
		t.Fatal(err)
	}
	full, err := sciir.Unmarshal(buf.Bytes())
	if err != nil {
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
	r, _ := p.Ring()
	rng := rand.New(rand.NewPCG(4, 5))
	var batch [][]ring.Tensor
	for range 3 {
		x, err := r.EncodeTensor(g.Inputs[0].Shape, randInput(g, rng), p.Scale)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, []ring.Tensor{x})
	}
	be, _ := cleartext.New(r)
	m, err := vm.New(p, be)
	if err != nil {
		t.Fatal(err)
	}
	// shared 0: one round trip per inference; 1: all three in one; 2: groups of two (a full group
	// and a partial one).
	var runs [3][2]Stats
	for shared := range 3 {
		stats := &runs[shared]
		opts := func(f *sciir.File) *serve.Options {
			return &serve.Options{File: f, NewBackend: func(ctx context.Context, conn *transport.Conn, _ []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
				var b [][]ring.Tensor
				if shared > 0 && party == 1 {
					b = batch
				}
				return newBackend(ctx, conn, party, r, f.Program, b, []int{0, 0, 2}[shared], func(party int, s *Stats) { stats[party] = *s })
			}}
		}
		cres, sres, err := serve.RunLocalBatch(context.Background(), opts(full), opts(client), batch)
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
					t.Errorf("shared %d: inference %d output %d: session %v, clear %v", shared, k, o, got.Value.Data, want[o].Value.Data)
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
		if want := []int{3, 1, 2}[shared]; c.RoundTrips != want || s.RoundTrips != want {
			t.Errorf("shared %d: %d and %d round trips for 3 inferences, want %d", shared, c.RoundTrips, s.RoundTrips, want)
		}
		t.Logf("shared %d: keys %d B once; %d round trips: %d B up, %d B down in all; keygen %v, encrypt %v, decrypt %v; server %v",
			shared, c.KeyBytes, c.RoundTrips, c.UploadBytes, c.DownloadBytes, c.KeygenTime, c.EncryptTime, c.DecryptTime, s.EvalTime)
	}
	one, shared, twos := runs[0][1], runs[1][1], runs[2][1]
	if one.UploadBytes != 3*shared.UploadBytes || one.DownloadBytes != 3*shared.DownloadBytes || one.KeyBytes != shared.KeyBytes {
		t.Errorf("sharing the slots: %d B up and %d B down, want a third of %d and %d", shared.UploadBytes, shared.DownloadBytes, one.UploadBytes, one.DownloadBytes)
	}
	if twos.UploadBytes != 2*shared.UploadBytes || twos.DownloadBytes != 2*shared.DownloadBytes {
		t.Errorf("groups of two: %d B up and %d B down, want twice %d and %d", twos.UploadBytes, twos.DownloadBytes, shared.UploadBytes, shared.DownloadBytes)
	}
}
