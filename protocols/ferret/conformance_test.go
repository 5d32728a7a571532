package ferret

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
)

// TestConformance: Ferret's core through the shared conformance suite of package ot.
func TestConformance(t *testing.T) {
	ottest.Conformance(t, func(t testing.TB) (*ot.Session, *ot.Session) {
		s0, s1 := otPair(t)
		ctx := context.Background()
		var f0, f1 *ot.Session
		ottest.MustBoth(t, func() (err error) { f0, err = NewSession(ctx, s0, tiny, Options{}); return },
			func() (err error) { f1, err = NewSession(ctx, s1, tiny, Options{}); return })
		return f0, f1
	})
}
