package fhe

import (
	"fmt"

	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/ring"
)

// EncryptInputs encrypts the client's inputs (ring elements of Z_n, as the VM encodes them) of
// up to Lanes inferences, one lane each: batch[k] holds inference k's inputs. The result has
// Vectors(i) vectors for input i, in input order (what Evaluate takes).
func (l *Layout) EncryptInputs(c *fheproto.Client, batch [][]ring.Tensor) ([]*fheproto.Vector, error) {
	if len(batch) == 0 || len(batch) > l.Lanes {
		return nil, fmt.Errorf("fhe: %d inferences in one ciphertext of %d lanes", len(batch), l.Lanes)
	}
	var out []*fheproto.Vector
	for i := range l.In {
		lanes := make([][][]uint64, l.Vectors(i))
		for _, inputs := range batch {
			if len(inputs) != len(l.In) {
				return nil, fmt.Errorf("fhe: %d inputs for a program with %d", len(inputs), len(l.In))
			}
			if len(inputs[i].Data) != l.In[i] {
				return nil, fmt.Errorf("fhe: input %d has %d values, the program wants %d", i, len(inputs[i].Data), l.In[i])
			}
			for g, v := range l.placeVectors(i, inputs[i].Data) {
				lanes[g] = append(lanes[g], v)
			}
		}
		for _, ls := range lanes {
			v, err := c.Encrypt(ls, l.inputPeriod(i), l.Stride)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// DecryptOutputs decrypts the results of count inferences (lanes) into ring elements of Z_n (the
// values the cleartext run reveals): out[k][o] is inference k's output o.
func (l *Layout) DecryptOutputs(c *fheproto.Client, outs []*fheproto.Vector, count int) ([][][]uint64, error) {
	if len(outs) != len(l.Out) {
		return nil, fmt.Errorf("fhe: %d results for a program with %d outputs", len(outs), len(l.Out))
	}
	if count < 1 || count > l.Lanes {
		return nil, fmt.Errorf("fhe: %d inferences in one ciphertext of %d lanes", count, l.Lanes)
	}
	res := make([][][]uint64, count)
	for k := range res {
		res[k] = make([][]uint64, len(outs))
	}
	for o, v := range outs {
		d, err := c.Decrypt(v, l.Out[o], l.Stride, count)
		if err != nil {
			return nil, fmt.Errorf("fhe: output %d: %w", o, err)
		}
		for k := range res {
			res[k][o] = d[k]
		}
	}
	return res, nil
}
