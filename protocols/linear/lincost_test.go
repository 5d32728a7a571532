package linear

import (
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
)

// TestLincostConstants: the OT-layer constants of the cost formulas (package lincost, which the
// compiler links without the OT layer) are the OT layer's own, so the formulas that
// TestMatMulCommunication and TestConvCommunication check against measured traffic stay exact.
func TestLincostConstants(t *testing.T) {
	if lincost.Lambda != ot.Lambda || lincost.MaxWidth != ot.MaxWidth {
		t.Fatalf("lincost: Lambda=%d MaxWidth=%d, ot: Lambda=%d MaxWidth=%d",
			lincost.Lambda, lincost.MaxWidth, ot.Lambda, ot.MaxWidth)
	}
	if lincost.MaxPadBits != 64*ot.MaxWidth {
		t.Fatalf("lincost.MaxPadBits=%d, want the widest OT message, %d bits", lincost.MaxPadBits, 64*ot.MaxWidth)
	}
}
