package main

// The three-party backend (sci3): the helper party and the data parties' links to it.

import (
	"context"
	"errors"
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
		return sci3.New(ctx, conn, t.Links[party], r, sci3.Options{Streams: streams, LinearPerRun: perRun})
	}, nil
}
