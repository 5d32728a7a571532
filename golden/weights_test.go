package golden

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// recorder is a net.Conn that keeps a copy of every byte read from it.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.buf.Write(p[:n])
	r.mu.Unlock()
	return n, err
}

// weightPatterns returns, for every weight tensor with at least minRun elements, byte patterns
// of its first minRun elements in the encodings a leak could take: ring elements as 8-byte
// words, as 4-byte words, the signed fixed-point integers as int64, and the packed l-bit stream.
func weightPatterns(p *ring.Ring, w [][]int64, minRun int) [][]byte {
	var pats [][]byte
	for _, data := range w {
		if len(data) < minRun {
			continue
		}
		run := data[:minRun]
		var b8, b4, packed []byte
		var acc uint64
		var nb int
		for _, v := range run {
			e := p.FromSigned(v)
			b8 = binary.LittleEndian.AppendUint64(b8, e)
			b4 = binary.LittleEndian.AppendUint32(b4, uint32(e))
			for k := 0; k < p.Bits; k++ {
				acc |= (e >> k & 1) << nb
				nb++
				if nb == 8 {
					packed = append(packed, byte(acc))
					acc, nb = 0, 0
				}
			}
		}
		pats = append(pats, b8, b4, packed)
	}
	return pats
}

// containsAny reports the first pattern found in buf, or -1.
func containsAny(buf []byte, pats [][]byte) int {
	for i, p := range pats {
		if bytes.Contains(buf, p) {
			return i
		}
	}
	return -1
}

func TestDetectorFindsPlantedWeights(t *testing.T) {
	// The leak detector itself must work: a buffer with a weight encoding planted in it is caught.
	r := ring.Must(24)
	w := [][]int64{{5, -3, 1000, 7, -20000, 3, 3, 9}}
	pats := weightPatterns(&r, w, 8)
	for i, p := range pats {
		buf := append(append(bytes.Repeat([]byte{0x5a}, 37), p...), 1, 2, 3)
		if containsAny(buf, pats) < 0 {
			t.Fatalf("planted pattern %d not found", i)
		}
	}
	if containsAny(bytes.Repeat([]byte{0x5a}, 1000), pats) >= 0 {
		t.Fatal("false positive")
	}
}

// TestWeightsNeverReachClient runs the MNIST model with party 1 on the client copy of the program
// (decoded from its file, which has no weights section) and checks that nothing party 1 received
// over the wire and no tensor party 1 held during the run contains a weight tensor's encoding.
// It also checks that party 0 refuses to run from the client copy.
func TestWeightsNeverReachClient(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := filepath.Join(root, "testdata", "mnist-small")
	g := loadModel(t, filepath.Join(dir, "model.onnx"))
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := compileTuned(t, g, ds.Samples, -1)
	f, err := sciir.Unmarshal(prog.clientFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range f.Program.Weights {
		if w.Data != nil {
			t.Fatalf("client file carries weight %q", w.Name)
		}
	}
	// Party 0 cannot run from the client copy.
	b, err := cleartext.New(ring.Must(prog.client.Bits))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vm.New(prog.client, b); !errors.Is(err, vm.ErrNoWeights) {
		t.Fatalf("party 0 on the client copy: %v, want ErrNoWeights", err)
	}

	r := ring.Must(prog.server.Bits)
	var weights [][]int64
	for _, w := range prog.server.Weights {
		weights = append(weights, w.Data)
	}
	pats := weightPatterns(&r, weights, 6)
	if len(pats) == 0 {
		t.Fatal("no weight patterns")
	}
	var recs []*recorder
	var mu sync.Mutex
	var seen [][]uint64 // every tensor party 1 produced
	inputs := encodeInputs(t, prog.server, inputsOf(ds.Samples[:2]))
	clear := runClear(t, prog.server, inputs)
	sec := runSecure(t, prog, inputs, secureOptions{
		streams: 2,
		wrap: func(party int, c net.Conn) net.Conn {
			if party == 0 {
				return c
			}
			rc := &recorder{Conn: c}
			recs = append(recs, rc)
			return rc
		},
		observe: func(party, _ int, v ring.Tensor) {
			if party == 1 {
				mu.Lock()
				seen = append(seen, append([]uint64(nil), v.Data...))
				mu.Unlock()
			}
		},
	})
	compareRuns(t, clear, sec)
	total := 0
	for i, rc := range recs {
		rc.mu.Lock()
		buf := rc.buf.Bytes()
		total += len(buf)
		if k := containsAny(buf, pats); k >= 0 {
			t.Errorf("stream %d: party 1 received a weight encoding (pattern %d)", i, k)
		}
		rc.mu.Unlock()
	}
	if k := containsAny(prog.clientFile, pats); k >= 0 {
		t.Errorf("the client program file contains a weight encoding (pattern %d)", k)
	}
	// Party 1's tensors, as 8-byte words.
	var mem bytes.Buffer
	for _, v := range seen {
		for _, e := range v {
			_ = binary.Write(&mem, binary.LittleEndian, e)
		}
	}
	if k := containsAny(mem.Bytes(), pats); k >= 0 {
		t.Errorf("a tensor of party 1 contains a weight encoding (pattern %d)", k)
	}
	t.Logf("checked %d weight patterns against %d bytes received by party 1 and %d tensors it held",
		len(pats), total, len(seen))
	if total == 0 || len(seen) == 0 {
		t.Fatal("nothing recorded")
	}
}
