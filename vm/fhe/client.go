package fhe

import (
	"fmt"

	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/ring"
)

// EncryptInputs encrypts the client's inputs (ring elements of Z_n, as the VM encodes them) with
// the layout's period.
func (l *Layout) EncryptInputs(c *fheproto.Client, inputs []ring.Tensor) ([]*fheproto.Vector, error) {
	if len(inputs) != len(l.In) {
		return nil, fmt.Errorf("fhe: %d inputs for a program with %d", len(inputs), len(l.In))
	}
	out := make([]*fheproto.Vector, len(inputs))
	for i, x := range inputs {
		if len(x.Data) != l.In[i] {
			return nil, fmt.Errorf("fhe: input %d has %d values, the program wants %d", i, len(x.Data), l.In[i])
		}
		v, err := c.Encrypt(x.Data, l.Period)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// DecryptOutputs decrypts the results into ring elements of Z_n (the values the cleartext run
// reveals).
func (l *Layout) DecryptOutputs(c *fheproto.Client, outs []*fheproto.Vector) ([][]uint64, error) {
	if len(outs) != len(l.Out) {
		return nil, fmt.Errorf("fhe: %d results for a program with %d outputs", len(outs), len(l.Out))
	}
	res := make([][]uint64, len(outs))
	for i, v := range outs {
		d, err := c.Decrypt(v, l.Out[i])
		if err != nil {
			return nil, fmt.Errorf("fhe: output %d: %w", i, err)
		}
		res[i] = d
	}
	return res, nil
}
