package dealer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Trio is the helper's side of a three-party session in one process: the data parties' links
// over in-memory pipes and the helper serving them (tests, scirun --local).
type Trio struct {
	Links [2]*Link           // the data parties' ends
	Conns [2]*transport.Conn // the helper's ends (for statistics)
	done  chan struct{}
	err   error
}

// Local starts the helper on pipes with the options opt and runs the link hellos (each data
// party draws its seed and sends it, as over the network). Close the trio when done.
func Local(ctx context.Context, opt transport.Options) (*Trio, error) {
	t := &Trio{done: make(chan struct{})}
	var ends [2]*transport.Conn
	for p := range 2 {
		ends[p], t.Conns[p] = transport.Pipe(opt)
	}
	var seeds [2]prg.Seed
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for p := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			t.Links[p], errs[p] = NewLink(ctx, ends[p], p)
		}()
		go func() {
			defer wg.Done()
			var q int
			q, seeds[p], errs[2+p] = AcceptLink(ctx, t.Conns[p])
			if errs[2+p] == nil && q != p {
				errs[2+p] = fmt.Errorf("dealer: Local: link %d announced party %d", p, q)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.close()
		return nil, err
	}
	h := NewHelper(seeds[0], seeds[1])
	go func() {
		defer close(t.done)
		t.err = h.ServeBoth(context.Background(), t.Conns[0], t.Conns[1])
	}()
	return t, nil
}

func (t *Trio) close() {
	for p := range 2 {
		if t.Links[p] != nil {
			t.Links[p].conn.Close()
		}
		if t.Conns[p] != nil {
			t.Conns[p].Close()
		}
	}
}

// Close tells the helper that both data parties are done (when their links are still usable),
// waits for it and closes the pipes. It returns the helper's error.
func (t *Trio) Close(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, l := range t.Links {
		if l.Err() == nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = l.Done(ctx) }()
		}
	}
	wg.Wait()
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	t.close()
	<-t.done
	return t.err
}
