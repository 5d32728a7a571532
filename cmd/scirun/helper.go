package main

// The three-party backend (sci3): the helper party and the data parties' links to it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// localTrio is the helper of a --local sci3 run: started by the first party's backend set-up,
// in this process, over in-memory pipes (with the --net link emulated on them).
type localTrio struct {
	once sync.Once
	trio *dealer.Trio
	err  error
}

func (l *localTrio) get(ctx context.Context, opt transport.Options) (*dealer.Trio, error) {
	l.once.Do(func() { l.trio, l.err = dealer.Local(context.WithoutCancel(ctx), opt) })
	return l.trio, l.err
}

// sci3Backend returns the constructor of a data party's sci3 backend: with --local, on a
// helper in this process.
func (c *config) sci3Backend(f *sciir.File, m *netmodel.Model) (serve.BackendFunc, error) {
	if !c.local {
		return nil, errors.New("backend sci3: only --local runs it so far (the networked helper, scirun --helper, is not built yet)")
	}
	topt := transport.Options{Timeout: c.timeout, Net: m}
	lt := &localTrio{}
	perRun := sci3.LinearCalls(f.Program)
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		t, err := lt.get(ctx, topt)
		if err != nil {
			return nil, err
		}
		b, err := sci3.New(ctx, conn, t.Links[party], r, sci3.Options{Streams: streams, LinearPerRun: perRun})
		if err != nil {
			return nil, err
		}
		return &sci3Party{Backend: b, quiet: c.quiet}, nil
	}, nil
}

// sci3Party prints the traffic with the helper when the session ends (the session report
// counts the traffic between the data parties only).
type sci3Party struct {
	*sci3.Backend
	quiet bool
}

func (b *sci3Party) Close() error {
	err := b.Backend.Close()
	if !b.quiet {
		s := b.Link().Conn().Stats()
		fmt.Fprintf(os.Stderr, "sci3: party %d ↔ helper: %s sent, %s received (%d frames received)\n",
			b.Party(), byteSize(s.BytesSent), byteSize(s.BytesRecv), s.FramesRecv)
	}
	return err
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}
